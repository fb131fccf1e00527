// Package interop holds the tests that run this project against the
// independent BabelQueue Python SDK (babelqueue 1.24.0, pinned in
// peer/requirements.txt) on real Kafka and Pulsar brokers.
//
// The tests are built only with the interop build tag and are run by
// `make interop`, which starts the brokers, prepares the Python virtual
// environment (venv.sh) and prints one line per scenario and a summary.
// The Python side is peer/peer.py, driven through exec with JSON over
// stdout. See README.md for how to run them and COMPATIBILITY.md for the
// known differences between the two SDKs and what this one does about each.
//
// The module is not released; no other module requires it.
package interop
