package engine

import (
	"bufio"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
)

// totalMemoryBytes reads the machine's memory from /proc/meminfo (0 when unknown).
func totalMemoryBytes() uint64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, _ := strconv.ParseUint(fields[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}

func osType() string {
	switch runtime.GOOS {
	case "linux":
		return "Linux"
	case "darwin":
		return "Darwin"
	case "windows":
		return "Windows"
	}
	return runtime.GOOS
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// osNameVersion is hostInfo's os.name and os.version: as MongoDB reports
// them on Linux, the distribution's name and release (/etc/os-release),
// or the kernel's release ("Kernel 6.1.0") when no release is given.
func osNameVersion() (name, version string) {
	name = runtime.GOOS
	if b, err := os.ReadFile("/etc/os-release"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				continue
			}
			v = strings.Trim(v, `"'`)
			switch k {
			case "NAME":
				name = v
			case "VERSION_ID":
				version = v
			}
		}
	}
	if version == "" {
		if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
			version = "Kernel " + strings.TrimSpace(string(b))
		}
	}
	return name, version
}
