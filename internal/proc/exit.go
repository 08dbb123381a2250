// SPDX-License-Identifier: Apache-2.0

package proc

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// ExitNotify returns a channel closed when process pid exits (it turns
// zombie or disappears): watched with a pidfd, or, on a kernel without
// pidfd_open, by checking the process every 100 ms.
func ExitNotify(pid int) (<-chan struct{}, error) {
	if err := CheckProcess(pid); err != nil {
		return nil, err
	}
	ch := make(chan struct{})
	fd, err := unix.PidfdOpen(pid, 0)
	if err == unix.ENOSYS {
		go func() {
			defer close(ch)
			for CheckProcess(pid) == nil {
				time.Sleep(100 * time.Millisecond)
			}
		}()
		return ch, nil
	}
	if err != nil {
		return nil, fmt.Errorf("watch process %d: %w (is the PID right?)", pid, err)
	}
	go func() {
		defer unix.Close(fd)
		defer close(ch)
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			n, err := unix.Poll(fds, -1)
			if err == unix.EINTR {
				continue
			}
			if err != nil || n > 0 {
				return
			}
		}
	}()
	return ch, nil
}
