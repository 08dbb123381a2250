// SPDX-License-Identifier: Apache-2.0

package push

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// Auth is how a sink identifies itself to the backend. Any combination of
// a tenant and one of basic auth or a bearer token may be set.
type Auth struct {
	// TenantID is sent as the X-Scope-OrgID header (multi-tenant Pyroscope,
	// Grafana Cloud); empty for none.
	TenantID string
	// BasicUser and BasicPassword are sent as HTTP basic auth when
	// BasicUser is set.
	BasicUser, BasicPassword string
	// BearerTokenFile is a file holding a bearer token, read before every
	// push (so that a rotated token is picked up). It must be a regular file
	// owned by root or this user and writable by nobody else.
	BearerTokenFile string
}

// TenantHeader is the header that carries the tenant.
const TenantHeader = "X-Scope-OrgID"

// Check validates the combination.
func (a Auth) Check() error {
	if a.BasicUser != "" && a.BearerTokenFile != "" {
		return errors.New("basic auth and a bearer token are exclusive: give one")
	}
	if a.BasicUser == "" && a.BasicPassword != "" {
		return errors.New("a basic-auth password needs a user name")
	}
	if err := checkCredential("tenant ID", a.TenantID); err != nil {
		return err
	}
	if err := checkCredential("basic-auth user", a.BasicUser); err != nil {
		return err
	}
	if strings.ContainsRune(a.BasicUser, ':') {
		return errors.New("basic-auth user holds a ':', which ends the user name in basic auth")
	}
	if err := checkCredential("basic-auth password", a.BasicPassword); err != nil {
		return err
	}
	if a.BearerTokenFile != "" {
		if _, err := ReadTokenFile(a.BearerTokenFile); err != nil {
			return err
		}
	}
	return nil
}

// headers returns the header fields to send (canonical names).
func (a Auth) headers() (map[string]string, error) {
	h := map[string]string{}
	if a.TenantID != "" {
		h[TenantHeader] = a.TenantID
	}
	switch {
	case a.BasicUser != "":
		h["Authorization"] = "Basic " + base64.StdEncoding.EncodeToString([]byte(a.BasicUser+":"+a.BasicPassword))
	case a.BearerTokenFile != "":
		tok, err := ReadTokenFile(a.BearerTokenFile)
		if err != nil {
			return nil, err
		}
		h["Authorization"] = "Bearer " + tok
	}
	return h, nil
}

// Apply sets the headers on an HTTP request (the bearer token file is read
// again each time).
func (a Auth) Apply(h http.Header) error {
	m, err := a.headers()
	if err != nil {
		return err
	}
	for k, v := range m {
		h.Set(k, v)
	}
	return nil
}

// maxTokenBytes bounds a token file.
const maxTokenBytes = 64 << 10

// checkCredential refuses a credential holding a control character (a C0
// byte, DEL or a C1 code point): an HTTP header or gRPC metadata cannot
// carry one, so every push would fail, and none is ever part of a real
// tenant, user, password or token.
func checkCredential(what, v string) error {
	for i, r := range v {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return fmt.Errorf("%s holds the control character %U at byte %d: give it without", what, r, i)
		}
	}
	return nil
}

// ReadTokenFile reads a bearer token (or a password): the file is opened
// without following a symbolic link and without blocking (a FIFO or a
// device is never opened for reading, so it cannot hold the caller up),
// and must be a regular file owned by root or this user, writable by
// nobody else (another user could otherwise choose the credentials a root
// process sends), at most 64 KiB, of one line without control characters.
// Surrounding white space is removed.
func ReadTokenFile(path string) (string, error) {
	f, err := openRegular(path, "token file")
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxTokenBytes+1))
	if err != nil {
		return "", fmt.Errorf("read token file %s: %w", path, err)
	}
	if len(b) > maxTokenBytes {
		return "", fmt.Errorf("token file %s is over %d bytes", path, maxTokenBytes)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("token file %s is empty", path)
	}
	if strings.ContainsAny(tok, "\r\n") {
		return "", fmt.Errorf("token file %s holds more than one line", path)
	}
	if err := checkCredential("token file "+path, tok); err != nil {
		return "", err
	}
	return tok, nil
}

// openRegular opens path for reading only if it is a regular file this
// user can trust: it is first opened with O_PATH (which neither follows a
// final symbolic link nor opens a FIFO or a device, so nothing blocks and
// no driver runs), checked, and only then reopened through /proc/self/fd,
// which reopens that very file.
func openRegular(path, what string) (*os.File, error) {
	pfd, err := unix.Open(path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", what, &os.PathError{Op: "open", Path: path, Err: err})
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return nil, fmt.Errorf("stat %s %s: %w", what, path, err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFLNK:
		return nil, fmt.Errorf("%s %s is a symbolic link: give the file itself", what, path)
	default:
		return nil, fmt.Errorf("%s %s is not a regular file", what, path)
	}
	if err := trustworthy(&st); err != nil {
		return nil, fmt.Errorf("%s %s: %w", what, path, err)
	}
	fd, err := unix.Open(fmt.Sprintf("/proc/self/fd/%d", pfd), unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", what, &os.PathError{Op: "open", Path: path, Err: err})
	}
	return os.NewFile(uintptr(fd), path), nil
}

// WorldReadable reports whether every user can read a credential file: a
// secret all can read is no secret. It says false when the file cannot be
// examined (reading it says why).
func WorldReadable(path string) bool {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return false
	}
	return st.Mode&0o004 != 0
}
