package testcerts

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteSet(t *testing.T) {
	dir := t.TempDir()
	if err := WriteSet(dir, KeyTypes...); err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	verify := func(name, host string, usage x509.ExtKeyUsage) error {
		pair, err := tls.LoadX509KeyPair(filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key"))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		_, err = pair.Leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: host, KeyUsages: []x509.ExtKeyUsage{usage}})
		return err
	}
	for _, n := range []string{"server", "server-ecdsa-p256", "server-rsa-2048", "server-rsa-4096"} {
		for _, host := range []string{"localhost", "127.0.0.1", "::1"} {
			if err := verify(n, host, x509.ExtKeyUsageServerAuth); err != nil {
				t.Errorf("%s for %s: %v", n, host, err)
			}
		}
	}
	if err := verify("client", "", x509.ExtKeyUsageClientAuth); err != nil {
		t.Errorf("client: %v", err)
	}
	var ce x509.CertificateInvalidError
	if err := verify("expired", "localhost", x509.ExtKeyUsageServerAuth); !errors.As(err, &ce) || ce.Reason != x509.Expired {
		t.Errorf("expired: %v, want x509.Expired", err)
	}
	var he x509.HostnameError
	if err := verify("wrongname", "localhost", x509.ExtKeyUsageServerAuth); !errors.As(err, &he) {
		t.Errorf("wrongname: %v, want a HostnameError", err)
	}
	var ue x509.UnknownAuthorityError
	if err := verify("other-client", "", x509.ExtKeyUsageClientAuth); !errors.As(err, &ue) {
		t.Errorf("other-client: %v, want an UnknownAuthorityError", err)
	}
}
