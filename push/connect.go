// SPDX-License-Identifier: Apache-2.0

package push

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"

	"connectrpc.com/connect"
	pushv1 "github.com/grafana/pyroscope/api/gen/proto/go/push/v1"
	"github.com/grafana/pyroscope/api/gen/proto/go/push/v1/pushv1connect"
	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"
)

// Connect pushes windows to Pyroscope's Connect push API
// (/push.v1.PusherService/Push), one series per window, labelled
// __name__ (the window's Name, process_cpu by default),
// service_name=SERVICE and the window's labels.
type Connect struct {
	client pushv1connect.PusherServiceClient
	opts   HTTPOptions
}

// ProfileName is the __name__ label of the pushed series.
const ProfileName = "process_cpu"

// NewConnect returns a sink for the Pyroscope server at base.
func NewConnect(base string, opts HTTPOptions) (*Connect, error) {
	u, err := checkServer(base, opts)
	if err != nil {
		return nil, err
	}
	return &Connect{client: pushv1connect.NewPusherServiceClient(opts.HTTPClient(), u.String()), opts: opts}, nil
}

// Name implements Sink.
func (s *Connect) Name() string { return "pyroscope-connect" }

// ConnectLabels returns the label pairs of a window's series.
func ConnectLabels(w *Window) []*typesv1.LabelPair {
	name := w.Name
	if name == "" {
		name = ProfileName
	}
	ls := []*typesv1.LabelPair{
		{Name: "__name__", Value: name},
		{Name: "service_name", Value: w.Service()},
	}
	for _, k := range w.sortedKeys(true) {
		ls = append(ls, &typesv1.LabelPair{Name: labelKey(k), Value: w.Labels[k]})
	}
	return ls
}

// Push implements Sink.
func (s *Connect) Push(ctx context.Context, w *Window) error {
	body, err := w.encode()
	if err != nil {
		return err
	}
	req := connect.NewRequest(&pushv1.PushRequest{Series: []*pushv1.RawProfileSeries{{
		Labels:  ConnectLabels(w),
		Samples: []*pushv1.RawSample{{RawProfile: body, ID: newUUID()}},
	}}})
	req.Header().Set("User-Agent", s.opts.userAgent())
	if err := s.opts.Auth.Apply(req.Header()); err != nil {
		return err
	}
	if _, err := s.client.Push(ctx, req); err != nil {
		var ce *connect.Error
		if errors.As(err, &ce) && !retryableCode(ce.Code().String(), ce.Message()) {
			return permanent(fmt.Errorf("pyroscope push: %w", err))
		}
		return fmt.Errorf("pyroscope push: %w", err)
	}
	return nil
}

// newUUID returns a random (version 4) UUID.
func newUUID() string {
	b := newUUIDBytes()
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// newUUIDBytes returns 16 random bytes laid out as a version 4 UUID.
func newUUIDBytes() []byte {
	b := make([]byte, 16)
	rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return b
}
