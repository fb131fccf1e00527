// Package smoke holds the smoke tests that prove the brokers started by
// tools/brokers are the real Apache Kafka and Apache Pulsar: behaviour a fake
// would get wrong (partitions, consumer group commits, LogAppendTime, SCRAM,
// delayed delivery per subscription type, redelivery counts).
//
// The tests carry the build tag integration and read the broker addresses
// through package brokertest:
//
//	tools/brokers/with-brokers.sh sh -c 'cd tools && go test -tags integration ./brokers/smoke/'
package smoke
