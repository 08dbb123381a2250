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
	if strings.ContainsAny(a.TenantID, "\r\n") {
		return errors.New("tenant ID holds a line break")
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

// apply sets the headers on an HTTP request.
func (a Auth) apply(h http.Header) error {
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

// ReadTokenFile reads a bearer token: the file is opened without following
// a symbolic link and must be a regular file owned by root or this user,
// writable by nobody else (another user could otherwise choose the
// credentials a root process sends). Surrounding white space is removed.
func ReadTokenFile(path string) (string, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return "", fmt.Errorf("token file %s is a symbolic link: give the file itself", path)
		}
		return "", fmt.Errorf("open token file: %w", &os.PathError{Op: "open", Path: path, Err: err})
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "", fmt.Errorf("stat token file %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return "", fmt.Errorf("token file %s is not a regular file", path)
	}
	if err := trustworthy(&st); err != nil {
		return "", fmt.Errorf("token file %s: %w", path, err)
	}
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
	return tok, nil
}
