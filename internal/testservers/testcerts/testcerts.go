// Package testcerts makes TLS certificates for tests at test time, with
// crypto/x509, so nothing secret is committed: a CA, server certificates
// signed by it for loopback (localhost, 127.0.0.1, ::1) with an ECDSA
// P-256, RSA-2048 or RSA-4096 key, client certificates, and the broken
// ones a prober must name (expired, for another name, from another CA).
package testcerts

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// KeyType is the kind of key a certificate is made with.
type KeyType string

// The key types a server certificate comes in.
const (
	ECDSAP256 KeyType = "ecdsa-p256"
	RSA2048   KeyType = "rsa-2048"
	RSA4096   KeyType = "rsa-4096"
)

// KeyTypes are every KeyType, cheapest signature first.
var KeyTypes = []KeyType{ECDSAP256, RSA2048, RSA4096}

// CA is a certificate authority that signs the certificates of a test.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer
	PEM  []byte // the certificate, PEM-encoded
}

// Pair is a certificate with its key, PEM-encoded as the files a server or
// a client is given.
type Pair struct {
	CertPEM, KeyPEM []byte
}

// NewCA makes a self-signed ECDSA P-256 CA named name.
func NewCA(name string) (*CA, error) {
	key, err := newKey(ECDSAP256)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("testcerts: CA: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, Key: key, PEM: pemBlock("CERTIFICATE", der)}, nil
}

// LeafOptions shape a certificate the CA signs.
type LeafOptions struct {
	// Key is the key type ("" = ECDSA P-256).
	Key KeyType
	// Client makes a client certificate (ExtKeyUsageClientAuth) instead of
	// a server one.
	Client bool
	// Names are the DNS names and IP addresses it is for (nil =
	// localhost, 127.0.0.1 and ::1).
	Names []string
	// Expired makes it valid only in the past.
	Expired bool
}

// Leaf makes a certificate signed by ca.
func (ca *CA) Leaf(o LeafOptions) (Pair, error) {
	if o.Key == "" {
		o.Key = ECDSAP256
	}
	key, err := newKey(o.Key)
	if err != nil {
		return Pair{}, err
	}
	names := o.Names
	if names == nil {
		names = []string{"localhost", "127.0.0.1", "::1"}
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: names[0]},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if _, ok := key.(*rsa.PrivateKey); ok {
		tmpl.KeyUsage |= x509.KeyUsageKeyEncipherment
	}
	if o.Client {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	if o.Expired {
		tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-48*time.Hour), time.Now().Add(-24*time.Hour)
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		return Pair{}, fmt.Errorf("testcerts: %s certificate: %w", o.Key, err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return Pair{}, err
	}
	return Pair{CertPEM: pemBlock("CERTIFICATE", der), KeyPEM: pemBlock("PRIVATE KEY", kder)}, nil
}

// Write writes the pair to dir/name.crt and dir/name.key (the key mode
// 0600) and returns their paths.
func (p Pair) Write(dir, name string) (cert, key string, err error) {
	cert, key = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if err := os.WriteFile(cert, p.CertPEM, 0o644); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(key, p.KeyPEM, 0o600); err != nil {
		return "", "", err
	}
	return cert, key, nil
}

// WriteSet writes into dir what a TLS test needs, by file name:
//
//	ca.crt                    the CA that signs the rest
//	other-ca.crt              a CA that signs none of them
//	server.crt/.key           a loopback server certificate (ECDSA P-256)
//	server-KEYTYPE.crt/.key   the same with each key type of keyTypes
//	client.crt/.key           a client certificate
//	expired.crt/.key          an expired loopback server certificate
//	wrongname.crt/.key        a server certificate for example.com only
//	other-client.crt/.key     a client certificate from other-ca
//
// RSA-4096 keys take seconds to make: pass only the key types a test
// measures.
func WriteSet(dir string, keyTypes ...KeyType) error {
	ca, err := NewCA("coldstart test CA")
	if err != nil {
		return err
	}
	other, err := NewCA("coldstart other CA")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), ca.PEM, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "other-ca.crt"), other.PEM, 0o644); err != nil {
		return err
	}
	leaves := []struct {
		name string
		ca   *CA
		o    LeafOptions
	}{
		{"server", ca, LeafOptions{}},
		{"client", ca, LeafOptions{Client: true, Names: []string{"coldstart-client"}}},
		{"expired", ca, LeafOptions{Expired: true}},
		{"wrongname", ca, LeafOptions{Names: []string{"example.com"}}},
		{"other-client", other, LeafOptions{Client: true, Names: []string{"coldstart-client"}}},
	}
	for _, kt := range keyTypes {
		leaves = append(leaves, struct {
			name string
			ca   *CA
			o    LeafOptions
		}{"server-" + string(kt), ca, LeafOptions{Key: kt}})
	}
	for _, l := range leaves {
		p, err := l.ca.Leaf(l.o)
		if err != nil {
			return err
		}
		if _, _, err := p.Write(dir, l.name); err != nil {
			return err
		}
	}
	return nil
}

func newKey(kt KeyType) (crypto.Signer, error) {
	switch kt {
	case ECDSAP256:
		return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case RSA2048:
		return rsa.GenerateKey(rand.Reader, 2048)
	case RSA4096:
		return rsa.GenerateKey(rand.Reader, 4096)
	}
	return nil, fmt.Errorf("testcerts: unknown key type %q", kt)
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		panic(err)
	}
	return n
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}
