// SPDX-License-Identifier: Apache-2.0

package push

import (
	"context"
	"testing"

	"github.com/tickprof/tickprof/push/pushtest"
)

func TestConnect(t *testing.T) {
	ln := pushtest.Listen(t, "127.0.0.1:0")
	recv, _ := pushtest.StartConnect(t, ln)
	s, err := NewConnect("http://"+ln.Addr().String(), HTTPOptions{Auth: Auth{TenantID: "t1", BasicUser: "u", BasicPassword: "p"}})
	if err != nil {
		t.Fatal(err)
	}
	w := testWindow(7)
	if err := s.Push(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	reqs, headers := recv.Received()
	if len(reqs) != 1 || len(reqs[0].Series) != 1 || len(reqs[0].Series[0].Samples) != 1 {
		t.Fatalf("received %v", reqs)
	}
	ser := reqs[0].Series[0]
	labels := map[string]string{}
	for _, l := range ser.Labels {
		labels[l.Name] = l.Value
	}
	want := map[string]string{"__name__": "process_cpu", "service_name": "app", "host": "h1", "pid": "4242", "window": "7"}
	for k, v := range want {
		if labels[k] != v {
			t.Errorf("label %s = %q, want %q (all: %v)", k, labels[k], v, labels)
		}
	}
	if headers[0].Get("X-Scope-OrgID") != "t1" {
		t.Errorf("tenant header missing: %v", headers[0])
	}
	if ser.Samples[0].ID == "" {
		t.Error("sample has no ID")
	}
	sameStacks(t, decode(t, ser.Samples[0].RawProfile), w.Profile)
}
