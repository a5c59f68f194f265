package integration

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestDataFileModes: the data directory the server creates is 0700 and
// every file in it 0600 (Badger opens some 0666), whatever the caller's
// umask; the self-signed certificate stays readable and its key is never
// written.
func TestDataFileModes(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	p := startProc(t, nil, "--listen", "127.0.0.1:0", "--data-dir", dir, "--tls-self-signed")
	caFile := filepath.Join(dir, "tls-cert.pem")
	ctx := context.Background()
	c, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + p.addr + "/?tls=true&tlsCAFile=" + caFile).SetTimeout(20 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Disconnect(ctx) }()
	// A document over Badger's 1 MB value threshold goes to the value log.
	big := bytes.Repeat([]byte("x"), 2<<20)
	if _, err := c.Database("modes").Collection("c").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "big", Value: big}}); err != nil {
		t.Fatalf("insert: %v\n%s", err, p.log())
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.wait(t, 20*time.Second); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, p.log())
	}

	var files int
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		mode := info.Mode().Perm()
		switch {
		case d.IsDir():
			if mode != 0o700 {
				t.Errorf("directory %s: mode %04o, want 0700", path, mode)
			}
		case d.Name() == "tls-cert.pem":
			if mode != 0o644 {
				t.Errorf("%s: mode %04o, want 0644 (clients read it)", path, mode)
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if !strings.Contains(string(raw), "CERTIFICATE") || strings.Contains(string(raw), "PRIVATE KEY") {
				t.Errorf("%s holds more or less than the certificate:\n%s", path, raw)
			}
		default:
			files++
			if mode&0o077 != 0 {
				t.Errorf("%s: mode %04o, want 0600", path, mode)
			}
			if strings.HasSuffix(d.Name(), ".pem") || strings.HasSuffix(d.Name(), ".key") {
				t.Errorf("unexpected key or certificate file %s", path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// LOCK is gone after a clean stop; MANIFEST, KEYREGISTRY, DISCARD, the
	// value log and a table or write-ahead file stay.
	if files < 4 {
		t.Errorf("only %d data files in %s", files, dir)
	}
}
