package outbox

import (
	"fmt"
	"testing"
)

// waveView shows rows as "wave:key/id" in their order.
func waveView(rows []row) string {
	s := ""
	for _, rw := range rows {
		s += fmt.Sprintf(" %d:%s/%d", rw.wave, rw.orderKey, rw.id)
	}
	return s
}

func TestInWavesSendsAKeysRowsInTurn(t *testing.T) {
	// Read out of id order, as a claim may return them: key a has four
	// rows, b three, c one.
	rows := []row{
		{id: 7, orderKey: "a"}, {id: 1, orderKey: "a"}, {id: 2, orderKey: "b"}, {id: 3, orderKey: "a"},
		{id: 4, orderKey: "c"}, {id: 5, orderKey: "b"}, {id: 6, orderKey: "a"}, {id: 8, orderKey: "b"},
	}
	got := waveView(inWaves(rows, 3, 10))
	// At most three rows a key (a's fourth, id 7, is left for a later
	// claim); each wave holds one row a key, in id order.
	want := " 0:a/1 0:b/2 0:c/4 1:a/3 1:b/5 2:a/6 2:b/8"
	if got != want {
		t.Fatalf("waves%s\nwant%s", got, want)
	}
}

func TestInWavesSplitsAWaveLargerThanASend(t *testing.T) {
	var rows []row
	for i := range 5 {
		rows = append(rows, row{id: int64(i + 1), orderKey: fmt.Sprint("k", i%3)})
	}
	// Wave 0 holds k0, k1, k2: more than a send of two takes.
	got := waveView(inWaves(rows, 4, 2))
	want := " 0:k0/1 0:k1/2 1:k2/3 2:k0/4 2:k1/5"
	if got != want {
		t.Fatalf("waves%s\nwant%s", got, want)
	}
	if n := waveLen(inWaves(rows, 4, 2)); n != 2 {
		t.Fatalf("first wave of %d rows, want 2", n)
	}
}

func TestInWavesOfOneKeepsEachKeysHead(t *testing.T) {
	rows := []row{{id: 3, orderKey: "a"}, {id: 2, orderKey: "b"}, {id: 1, orderKey: "a"}}
	if got, want := waveView(inWaves(rows, 1, 500)), " 0:a/1 0:b/2"; got != want {
		t.Fatalf("waves%s\nwant%s", got, want)
	}
}
