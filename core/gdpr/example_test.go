package gdpr_test

import (
	"crypto/rand"
	"errors"
	"fmt"
	"sync"

	"github.com/babelqueue/babelqueue-go/core/gdpr"
)

// subjectKeys is a key store with one AES key per data subject. A real one
// lives in a KMS or a database; deleting a subject's key is the erasure.
type subjectKeys struct {
	mu   sync.Mutex
	keys map[string]*gdpr.AESGCM
}

var errErased = errors.New("subject erased")

// cipher returns the subject's cipher, creating its key on first use when
// create is set (the producing side); a deleted key stays deleted.
func (s *subjectKeys) cipher(subject string, create bool) (gdpr.Cipher, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.keys[subject]; ok {
		return c, nil
	}
	if !create {
		return nil, errErased
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	c, err := gdpr.NewAESGCM(key)
	if err != nil {
		return nil, err
	}
	s.keys[subject] = c
	return c, nil
}

func (s *subjectKeys) erase(subject string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.keys, subject)
}

// Crypto-shredding: each customer's personal fields are encrypted under a
// key of their own, chosen by the customer_id field. Erasing a customer
// deletes the key; every retained message (queue, retry, dead letter,
// archive) still holds the ciphertext, which no one can open any more,
// while the other customers' messages stay readable. With
// babelqueue.WithFieldProtector(consumer) the erased customer's messages
// are dead-lettered with reason decrypt_failed instead of being handled.
func ExampleWithSubjectKeys() {
	store := &subjectKeys{keys: map[string]*gdpr.AESGCM{}}
	paths := gdpr.PathsByURN{"urn:shop:order:placed": gdpr.NewPaths("email", "address")}
	producer, _ := gdpr.NewProtector(paths, nil, gdpr.WithSubjectKeys("customer_id", func(s string) (gdpr.Cipher, error) {
		return store.cipher(s, true)
	}))
	consumer, _ := gdpr.NewProtector(paths, nil, gdpr.WithSubjectKeys("customer_id", func(s string) (gdpr.Cipher, error) {
		return store.cipher(s, false)
	}))

	ada, _ := producer.ProtectFields("urn:shop:order:placed", []byte(`{"customer_id":"c-1","email":"ada@example.com","address":"1 Main St"}`))
	bob, _ := producer.ProtectFields("urn:shop:order:placed", []byte(`{"customer_id":"c-2","email":"bob@example.com","address":"2 Side St"}`))

	store.erase("c-1") // Ada asked to be forgotten

	_, err := consumer.UnprotectFields("urn:shop:order:placed", ada)
	fmt.Println("ada:", errors.Is(err, gdpr.ErrDecrypt), errors.Is(err, errErased))
	clear, err := consumer.UnprotectFields("urn:shop:order:placed", bob)
	fmt.Println("bob:", string(clear), err)
	// Output:
	// ada: true true
	// bob: {"customer_id":"c-2","email":"bob@example.com","address":"2 Side St"} <nil>
}
