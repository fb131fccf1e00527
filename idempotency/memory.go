package idempotency

import (
	"context"
	"sync"
	"time"
)

// MemoryStore is a process-local Store. It is safe for concurrent use;
// expired records are dropped lazily and by Cleanup.
type MemoryStore struct {
	now func() time.Time

	mu  sync.Mutex
	ids map[string]memRecord
}

type memRecord struct {
	token   string // "" for a done record
	expires time.Time
}

// NewMemoryStore returns an empty MemoryStore reading time from now
// (time.Now when nil).
func NewMemoryStore(now func() time.Time) *MemoryStore {
	if now == nil {
		now = time.Now
	}
	return &MemoryStore{now: now, ids: make(map[string]memRecord)}
}

func (m *MemoryStore) live(r memRecord, now time.Time) bool {
	return r.expires.IsZero() || now.Before(r.expires)
}

// Claim implements Store.
func (m *MemoryStore) Claim(_ context.Context, id, token string, lease time.Duration) (State, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	if r, ok := m.ids[id]; ok && m.live(r, now) {
		if r.token == "" {
			return Done, nil
		}
		return Busy, nil
	}
	m.ids[id] = memRecord{token: token, expires: now.Add(lease)}
	return Claimed, nil
}

// Complete implements Store.
func (m *MemoryStore) Complete(_ context.Context, id, token string, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	r, ok := m.ids[id]
	if !ok || r.token != token || !m.live(r, now) {
		return ErrLeaseLost
	}
	var exp time.Time
	if ttl > 0 {
		exp = now.Add(ttl)
	}
	m.ids[id] = memRecord{expires: exp}
	return nil
}

// Release implements Store.
func (m *MemoryStore) Release(_ context.Context, id, token string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.ids[id]; ok && r.token == token {
		delete(m.ids, id)
	}
	return nil
}

// Forget implements Store.
func (m *MemoryStore) Forget(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.ids, id)
	return nil
}

// Cleanup drops every expired record and returns how many it dropped.
func (m *MemoryStore) Cleanup(_ context.Context) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	n := 0
	for id, r := range m.ids {
		if !m.live(r, now) {
			delete(m.ids, id)
			n++
		}
	}
	return n, nil
}

// Len returns the number of records held, expired ones included.
func (m *MemoryStore) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.ids)
}
