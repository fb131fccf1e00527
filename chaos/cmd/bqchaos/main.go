// Command bqchaos is the chaos suite of BabelQueue for Go, run against real
// brokers (tools/brokers):
//
//	bqchaos run  -broker kafka|pulsar [-n N] [-kills K] [-duration D] [-graceful] ...
//	bqchaos leak -broker kafka|pulsar [-cycles 50]
//	bqchaos producer-kill -broker kafka|pulsar [-n N] [-kills K] [-duration D]
//	bqchaos redrive-chaos -broker kafka|pulsar [-n N] [-kills K] [-duration D]
//
// `run` provisions a work topic with 6 partitions (Kafka: its retry tiers
// and DLQ), produces N envelopes whose ids it records durably first, runs
// two consumer processes (this binary re-executed as `bqchaos consumer`)
// and, on Kafka, `bq reinject`; it SIGKILLs (with -graceful: SIGTERMs) a
// random one of them K times and restarts it, kill -9s the broker once
// (without -graceful) and starts it on its kept data, drains, reads the
// topics back and prints one line
//
//	chaos: broker=<b> produced=N handled=H dead_lettered=D lost=L duplicates=U contradictions=C kills=K broker_restarts=B lag=G
//
// exiting 1 when L, C or G is not 0 or U exceeds the bound (chaos.Bound).
// `leak` opens and closes the binding's transport, a Reinjector (Kafka) and
// an App consume loop -cycles times and prints one `leak:` line, exiting 1
// when goroutines or broker connections do not return to the baseline.
// `account -dir D` accounts a kept run directory again. See chaos/README.md.
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	switch os.Args[1] {
	case "run":
		os.Exit(runMain(os.Args[2:]))
	case "consumer":
		os.Exit(consumerMain(os.Args[2:]))
	case "leak":
		os.Exit(leakMain(os.Args[2:]))
	case "account":
		os.Exit(accountMain(os.Args[2:]))
	case "producer-kill":
		os.Exit(producerKillMain(os.Args[2:]))
	case "producer":
		os.Exit(producerMain(os.Args[2:]))
	case "redrive-chaos":
		os.Exit(redriveChaosMain(os.Args[2:]))
	case "redriver":
		os.Exit(redriverMain(os.Args[2:]))
	default:
		usage()
		os.Exit(2)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: bqchaos run|leak -broker kafka|pulsar [flags]   (bqchaos run -h)")
}
