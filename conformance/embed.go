package conformance

import (
	"embed"
	"io/fs"
)

//go:embed suite
var embedded embed.FS

// DefaultSuiteFS is this module's own suite (the suite directory), embedded
// in the binary so it is found wherever the code runs.
func DefaultSuiteFS() fs.FS {
	sub, err := fs.Sub(embedded, "suite")
	if err != nil {
		panic(err) // the embed pattern guarantees the directory exists
	}
	return sub
}

// EmbeddedSuite is the Suite.Name (and Report.Suite) of DefaultSuite.
const EmbeddedSuite = "embedded"

// DefaultSuite loads this module's own suite.
func DefaultSuite() (*Suite, error) {
	s, err := Load(DefaultSuiteFS())
	if err != nil {
		return nil, err
	}
	s.Name = EmbeddedSuite
	return s, nil
}
