package main

import (
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/parsecdb/parsec/wire"
)

// tlsConfig builds the listener's TLS configuration from the flags: a
// certificate and key in PEM files, or with --tls-self-signed a new
// self-signed certificate for this host, written as PEM to certOut so that
// clients can trust it (tlsCAFile). nil when TLS is off.
func (o *serveOptions) tlsConfig(certOut string) (*tls.Config, string, error) {
	switch {
	case o.tlsCertFile != "" || o.tlsKeyFile != "":
		cert, err := tls.LoadX509KeyPair(o.tlsCertFile, o.tlsKeyFile)
		if err != nil {
			return nil, "", fmt.Errorf("--tls-cert-file/--tls-key-file: %w", err)
		}
		return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, o.tlsCertFile, nil
	case o.tlsSelfSigned:
		cert, certPEM, err := wire.SelfSignedCert(time.Now())
		if err != nil {
			return nil, "", fmt.Errorf("--tls-self-signed: %w", err)
		}
		// The certificate alone is written, readable by all (clients of
		// other users trust it), despite the server's umask; the key
		// stays in memory.
		if err := os.WriteFile(certOut, certPEM, 0o644); err != nil {
			return nil, "", fmt.Errorf("--tls-self-signed: write the certificate: %w", err)
		}
		if err := os.Chmod(certOut, 0o644); err != nil {
			return nil, "", fmt.Errorf("--tls-self-signed: %w", err)
		}
		return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, certOut, nil
	}
	return nil, "", nil
}

// selfSignedPath is where --tls-self-signed writes its certificate: in the
// data directory, or the temporary directory for --in-memory.
func selfSignedPath(dataDir string) string {
	if dataDir == "" {
		return filepath.Join(os.TempDir(), fmt.Sprintf("parsec-tls-%d.pem", os.Getpid()))
	}
	return filepath.Join(dataDir, "tls-cert.pem")
}
