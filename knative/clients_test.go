package knative

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// TestClientsWarnOnce: a warning the API server sends with every reply
// (Knative's webhook warns of each Service without a securityContext) is
// printed once, not once per request.
func TestClientsWarnOnce(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Warning", `299 - "Kubernetes default value is insecure"`)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"apiVersion":"serving.knative.dev/v1","kind":"ServiceList","items":[]}`)
	}))
	defer srv.Close()

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := os.Stderr
	os.Stderr = w
	c, err := NewClients(&rest.Config{Host: srv.URL})
	os.Stderr = stderr
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := c.Serving.Services("bench").List(context.Background(), metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(out), "Kubernetes default value is insecure"); n != 1 {
		t.Errorf("the warning was printed %d times, want once:\n%s", n, out)
	}
}
