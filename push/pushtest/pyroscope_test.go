// SPDX-License-Identifier: Apache-2.0

package pushtest

import (
	"net"
	"strings"
	"testing"
)

// TestStartRefusesTakenPort: a port held by another process (a server
// left by an interrupted run) makes Start fail before it runs the script.
func TestStartRefusesTakenPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("listen on loopback: %v", err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	_, err = StartPyroscope("/nonexistent/start", 0, port, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "is taken") {
		t.Fatalf("StartPyroscope on a taken port: %v, want a port-taken error", err)
	}
}
