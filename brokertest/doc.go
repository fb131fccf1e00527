// Package brokertest gives integration tests the addresses of the real
// brokers started by tools/brokers (make brokers-up, or
// tools/brokers/with-brokers.sh) and unique topic names.
//
// The addresses come from environment variables that tools/brokers/up.sh
// prints:
//
//	BQ_KAFKA_BROKERS        127.0.0.1:19092 (PLAINTEXT listener; a comma-separated list is accepted)
//	BQ_KAFKA_SASL_BROKERS   127.0.0.1:19093 (SASL_PLAINTEXT listener, SCRAM-SHA-256 and SCRAM-SHA-512)
//	BQ_KAFKA_SASL_USER      SCRAM user
//	BQ_KAFKA_SASL_PASSWORD  SCRAM password
//	BQ_PULSAR_URL           pulsar://127.0.0.1:16650
//	BQ_PULSAR_ADMIN_URL     http://127.0.0.1:18080
//	BQ_KAFKA_TLS_BROKERS       127.0.0.1:19095 (SSL listener)
//	BQ_KAFKA_SASL_TLS_BROKERS  127.0.0.1:19096 (SASL_SSL listener, SCRAM-SHA-256 and SCRAM-SHA-512)
//	BQ_KAFKA_TLS_CA            PEM file of the CA that signed Kafka's certificate
//	BQ_PULSAR_TLS_URL          pulsar+ssl://127.0.0.1:16651
//	BQ_PULSAR_TLS_CA           PEM file of the CA that signed Pulsar's certificate
//	BQ_PULSAR_TOKEN            a JWT the Pulsar broker accepts (clients without one are let in too)
//
// When a variable a test needs is missing, the test is skipped with a message
// saying how to start the brokers; when the environment variable CI is
// non-empty the test fails instead, so a CI run can never pass by skipping
// every broker test. A variable that is set but malformed always fails the
// test.
//
// The package uses only the standard library, so every module can import it
// from its integration tests (build tag integration) at no cost.
package brokertest
