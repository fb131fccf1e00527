//go:build integration && !unix

package pulsar

import "time"

// processCPU reports false: the process CPU time is not read on this
// platform.
func processCPU() (time.Duration, bool) { return 0, false }
