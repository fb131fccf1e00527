package main

import (
	"net"
	"testing"
)

// brokerConns counts this process's connections to a port, and only those.
func TestBrokerConns(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	before, err := brokerConns(port)
	if err != nil {
		t.Fatal(err)
	}
	if before != 0 {
		t.Fatalf("connections to a fresh port = %d; want 0", before)
	}
	var conns []net.Conn
	for range 3 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	// The accepted ends have the port as their local port, not their
	// remote one: only the three dialled ends count.
	if n, err := brokerConns(port); err != nil || n != 3 {
		t.Fatalf("connections with 3 open = %d, %v; want 3", n, err)
	}
	for _, c := range conns {
		c.Close()
	}
	if n, err := brokerConns(port); err != nil || n != 0 {
		t.Fatalf("connections after closing = %d, %v; want 0", n, err)
	}
}
