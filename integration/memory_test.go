package integration

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestServerStatusMemory: serverStatus.mem reports the kernel's resident
// and virtual memory and its anonymous and file-backed parts, in MiB.
func TestServerStatusMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skipf("/proc/self/status is Linux's (this is %s)", runtime.GOOS)
	}
	s := startTestServer(t)
	var st struct {
		Mem struct {
			Resident, Virtual, ResidentAnonymous, ResidentFileMapped, ResidentShared int64
			Supported                                                                bool
		} `bson:"mem"`
	}
	raw := runOK(t, newTestClient(t, s).Database("admin"), bson.D{{Key: "serverStatus", Value: 1}})
	if err := bson.Unmarshal(mustLookup(t, raw, "mem").Document(), &st.Mem); err != nil {
		t.Fatal(err)
	}
	m := st.Mem
	// The server runs in this process: compare with what the kernel says.
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	var vmRSS int64
	for _, line := range splitLines(string(b)) {
		var kb int64
		if n, _ := sscanKB(line, "VmRSS:", &kb); n {
			vmRSS = kb >> 10
		}
	}
	if !m.Supported || m.Resident <= 0 || m.Virtual < m.Resident {
		t.Fatalf("mem = %+v", m)
	}
	if d := m.Resident - vmRSS; d < -64 || d > 64 {
		t.Errorf("resident %d MiB, the kernel says %d MiB", m.Resident, vmRSS)
	}
	if parts := m.ResidentAnonymous + m.ResidentFileMapped + m.ResidentShared; parts < m.Resident-3 || parts > m.Resident+64 {
		t.Errorf("anonymous %d + file %d + shared %d MiB is not resident %d MiB", m.ResidentAnonymous, m.ResidentFileMapped, m.ResidentShared, m.Resident)
	}
}

// TestMemoryLimitFlag: --memory-limit (and PARSEC_MEMORY_LIMIT) sets Go's
// soft limit, which serverStatus reports; a limit too small is refused.
func TestMemoryLimitFlag(t *testing.T) {
	t.Parallel()
	p := startProc(t, []string{"PARSEC_MEMORY_LIMIT=300MiB"}, "--listen", "127.0.0.1:0", "--data-dir", t.TempDir())
	var st struct {
		Mem struct {
			MemoryLimit int64 `bson:"memoryLimit"`
		} `bson:"mem"`
	}
	if err := connect(t, p.addr).Database("admin").RunCommand(context.Background(), bson.D{{Key: "serverStatus", Value: 1}}).Decode(&st); err != nil {
		t.Fatal(err)
	}
	if st.Mem.MemoryLimit != 300 {
		t.Errorf("serverStatus.mem.memoryLimit = %d MiB, want 300", st.Mem.MemoryLimit)
	}
	if _, err := tryStartProc(t, nil, "--listen", "127.0.0.1:0", "--in-memory", "--memory-limit", "1MiB"); err == nil {
		t.Errorf("--memory-limit 1MiB accepted")
	}
}

func splitLines(s string) []string {
	var out []string
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != '\n' {
			i++
		}
		out = append(out, s[:i])
		if i < len(s) {
			i++
		}
		s = s[i:]
	}
	return out
}

// sscanKB reads "<name> <n> kB".
func sscanKB(line, name string, kb *int64) (bool, error) {
	if len(line) < len(name) || line[:len(name)] != name {
		return false, nil
	}
	_, err := fmt.Sscanf(line[len(name):], "%d kB", kb)
	return err == nil, err
}
