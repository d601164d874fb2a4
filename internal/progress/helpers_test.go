package progress

import (
	"bytes"
	"os"
	"regexp"
	"sync"
	"testing"
)

// syncBuffer is a bytes.Buffer that mpb's goroutine and the test can share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var escapes = regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]`)

func stripEscapes(s string) string { return escapes.ReplaceAllString(s, "") }

func osCreateTemp(t *testing.T) (*os.File, error) {
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	if err == nil {
		t.Cleanup(func() { f.Close() })
	}
	return f, err
}
