//go:build integration && !linux

package pulsar

import "time"

// hostCPU is not read on this platform: every reading is zero.
type hostCPU struct {
	busy, total, broker time.Duration
}

func readHostCPU(int) hostCPU { return hostCPU{} }

func pulsarBrokerPID() int { return 0 }
