package pkg

// Short says what it guarantees. Then a long second sentence that may run on and on for as many words as it likes without being reported at all by the check.
func Short() {}

// Long is a first sentence that runs on and on, with one clause after another, until it holds more words than the twenty-five the project allows it to have.
func Long() {}

// T is a type.
type T struct{}

// Method of T has a first sentence that runs on and on, with one clause after another, until it holds more words than the project allows here.
func (T) Method() {}

func (T) Undocumented() {}

// unexported is not checked even though its first sentence runs on and on, with one clause after another, until it holds more words than allowed.
func unexported() {}

// Group of constants whose comment runs on and on, with one clause after another, until its first sentence holds more words than the project allows here.
const (
	A = 1
	B = 2
)

// Chain opens (with one aside) and then (a second one) in a short sentence.
func Chain() {}

// Call returns slog.Default() (the default logger) once.
func Call() {}
