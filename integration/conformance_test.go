package integration

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parsecdb/parsec/integration/unified"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestConformance runs the MongoDB driver specification tests (unified
// format) in ../shared/specs against Parsec, one server per folder, the
// folders in parallel. A spec test that fails is not a Go test failure:
// the test fails only when a test listed in conformance/baseline.txt no
// longer passes. It writes the per-folder figures to
// conformance/summary.txt; -v logs every failure with its reason.
//
// Regenerate the baseline after an improvement:
//
//	go test ./integration/ -run TestConformance -count=1 -args -conformance.rewrite
var (
	conformanceRewrite = flag.Bool("conformance.rewrite", false, "rewrite integration/conformance/baseline.txt with the spec tests that pass now")
	conformanceRun     = flag.String("conformance.run", "", "only run spec files whose \"<folder>/<file>\" matches this regexp (no baseline check for the others)")
)

// conformanceFolders are the spec areas run, in report order.
var conformanceFolders = []string{
	"crud", "collection-management", "index-management", "sessions",
	"transactions", "retryable-writes", "change-streams",
}

const (
	baselinePath = "conformance/baseline.txt"
	summaryPath  = "conformance/summary.txt"
	rewriteHint  = "go test ./integration/ -run TestConformance -count=1 -args -conformance.rewrite"
)

// specDir finds ../shared/specs from the repository root (the test runs
// in integration/).
func specDir(t *testing.T) string {
	dir, err := filepath.Abs(filepath.Join("..", "..", "shared", "specs"))
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("conformance: spec tests not found at %s (../shared/specs beside the repository): %v", dir, err)
	}
	for _, f := range conformanceFolders {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || !fi.IsDir() {
			t.Fatalf("conformance: spec folder %s missing in %s: %v", f, dir, err)
		}
	}
	return dir
}

func TestConformance(t *testing.T) {
	dir := specDir(t)
	var filter *regexp.Regexp
	if *conformanceRun != "" {
		if *conformanceRewrite {
			t.Fatal("conformance: -conformance.rewrite needs the whole suite; drop -conformance.run")
		}
		filter = regexp.MustCompile(*conformanceRun)
	}

	start := time.Now()
	results := make(map[string][]unified.Result, len(conformanceFolders))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, folder := range conformanceFolders {
		files, err := filepath.Glob(filepath.Join(dir, folder, "*.json"))
		if err != nil || len(files) == 0 {
			t.Fatalf("conformance: no spec files in %s/%s: %v", dir, folder, err)
		}
		sort.Strings(files)
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := runConformanceFolder(folder, files, filter)
			if err != nil {
				t.Errorf("conformance %s: %v", folder, err)
				return
			}
			mu.Lock()
			results[folder] = res
			mu.Unlock()
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	summary := conformanceSummary(results, time.Since(start))
	if filter == nil {
		// Written even when the baseline check below stops the test.
		defer func() {
			if err := os.WriteFile(summaryPath, []byte(summary), 0o644); err != nil {
				t.Errorf("write %s: %v", summaryPath, err)
			}
		}()
	}
	if testing.Verbose() {
		for _, folder := range conformanceFolders {
			for _, r := range results[folder] {
				if r.Status == unified.Failed {
					t.Logf("FAIL %s/%s: %s\n    %s", folder, r.File, r.Test, r.Reason)
				}
			}
		}
	}
	t.Log("\n" + summary)

	passing := passingTests(results)
	if *conformanceRewrite {
		writeBaseline(t, passing)
		summary += fmt.Sprintf("\nbaseline rewritten: %d passing tests\n", len(passing))
	} else {
		lost, added := checkBaseline(t, passing, results, filter)
		if lost > 0 {
			summary += fmt.Sprintf("\nREGRESSION: %d tests of the baseline no longer pass (see the test output)\n", lost)
		}
		if added > 0 {
			line := fmt.Sprintf("%d tests pass that are not in the baseline; record them with: %s", added, rewriteHint)
			t.Log(line)
			summary += "\n" + line + "\n"
		}
	}
}

// runConformanceFolder runs a folder's files in order against a server of
// its own (the folders share database names).
func runConformanceFolder(folder string, files []string, filter *regexp.Regexp) ([]unified.Result, error) {
	var selected []string
	for _, path := range files {
		if filter == nil || filter.MatchString(folder+"/"+filepath.Base(path)) {
			selected = append(selected, path)
		}
	}
	// Parsec answers as a router by default: the tests run against that.
	all, err := runConformanceFiles(selected, "", nil)
	if err != nil {
		return nil, err
	}
	// Those written for a replica set only run against a server started
	// with --replica-set, the presentation Cosmos DB connection strings
	// use. A test runs in one of the two passes, never both.
	rsOnly := map[string]bool{}
	for _, r := range all {
		if r.Status == unified.Skipped && strings.Contains(r.Reason, "needs topology") {
			rsOnly[r.File+"\x00"+r.Test] = true
		}
	}
	if len(rsOnly) == 0 {
		return all, nil
	}
	again, err := runConformanceFiles(selected, "rs0", func(file, test string) bool { return rsOnly[file+"\x00"+test] })
	if err != nil {
		return nil, err
	}
	if len(again) != len(all) {
		return nil, fmt.Errorf("the replica-set pass gave %d results, the first %d", len(again), len(all))
	}
	for i, r := range again {
		if r.Reason != unified.NotSelected && !strings.Contains(r.Reason, "needs topology") {
			all[i] = r
		}
	}
	return all, nil
}

// runConformanceFiles runs spec files against a server of their own: a
// router, or with replicaSet the primary of a one-member replica set.
// Access control is on, as in the drivers' own CI: every client
// authenticates as root (and the tests that need auth run).
func runConformanceFiles(files []string, replicaSet string, only func(file, test string) bool) ([]unified.Result, error) {
	const user, pwd = "spec-root", "spec-pw"
	srv, err := Launch(ServerOptions{InMemory: true, EnableTestCommands: true, Auth: true, RootUser: user, RootPassword: pwd, ReplicaSet: replicaSet})
	if err != nil {
		return nil, err
	}
	defer func() { _ = srv.Stop() }()
	ctx := context.Background()
	runner, err := unified.NewRunner(ctx, srv.Addr, &options.Credential{Username: user, Password: pwd, AuthSource: "admin"})
	if err != nil {
		return nil, err
	}
	defer runner.Close()
	runner.Select = only
	var all []unified.Result
	for _, path := range files {
		all = append(all, runner.RunFile(ctx, path)...)
	}
	return all, nil
}

func baselineKey(folder string, r unified.Result) string {
	return folder + "/" + r.File + ": " + r.Test
}

// passingTests lists the tests that passed; a name shared by several
// tests of a file counts as passing only if all of them pass.
func passingTests(results map[string][]unified.Result) map[string]bool {
	pass := map[string]bool{}
	for folder, rs := range results {
		for _, r := range rs {
			k := baselineKey(folder, r)
			ok, seen := pass[k]
			pass[k] = (ok || !seen) && r.Status == unified.Passed
		}
	}
	for k, ok := range pass {
		if !ok {
			delete(pass, k)
		}
	}
	return pass
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func writeBaseline(t *testing.T, passing map[string]bool) {
	var b strings.Builder
	b.WriteString("# Spec tests (../shared/specs, unified format) that pass against Parsec.\n")
	b.WriteString("# TestConformance fails when one of them stops passing. Regenerate with:\n")
	b.WriteString("#   " + rewriteHint + "\n")
	for _, k := range sortedKeys(passing) {
		b.WriteString(k + "\n")
	}
	if err := os.WriteFile(baselinePath, []byte(b.String()), 0o644); err != nil {
		t.Fatalf("write %s: %v", baselinePath, err)
	}
}

// checkBaseline fails for every baseline test that no longer passes; it
// returns how many did, and how many passing tests the baseline does not
// list yet.
func checkBaseline(t *testing.T, passing map[string]bool, results map[string][]unified.Result, filter *regexp.Regexp) (lost, added int) {
	f, err := os.Open(baselinePath)
	if err != nil {
		t.Fatalf("conformance: %v (create it with: %s)", err, rewriteHint)
	}
	defer f.Close()
	reasons := map[string]string{}
	for folder, rs := range results {
		for _, r := range rs {
			if r.Status != unified.Passed {
				reasons[baselineKey(folder, r)] = r.Status.String() + ": " + r.Reason
			}
		}
	}
	listed := map[string]bool{}
	var lostTests []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		listed[line] = true
		if filter != nil {
			file, _, _ := strings.Cut(line, ": ")
			if !filter.MatchString(file) {
				continue
			}
		}
		if !passing[line] {
			why, ok := reasons[line]
			if !ok {
				why = "not found in the spec files any more"
			}
			lostTests = append(lostTests, line+"\n    "+why)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(lostTests) > 0 {
		t.Errorf("conformance: %d tests of the baseline no longer pass:\n%s\n(if that is intended, rewrite the baseline: %s)",
			len(lostTests), strings.Join(lostTests, "\n"), rewriteHint)
	}
	for _, k := range sortedKeys(passing) {
		if !listed[k] {
			added++
			if testing.Verbose() {
				t.Logf("newly passing (not in the baseline): %s", k)
			}
		}
	}
	return len(lostTests), added
}

// conformanceSummary is the per-folder table and the failures grouped by
// cause (the first thing that went wrong in each failing test).
func conformanceSummary(results map[string][]unified.Result, took time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Conformance (unified spec tests, ../shared/specs), %s\n", took.Round(time.Second))
	fmt.Fprintf(&b, "%-24s %7s %7s %7s %7s\n", "folder", "passed", "failed", "skipped", "total")
	var tp, tf, ts int
	byCause := map[string]map[string]int{} // cause -> folder -> count
	for _, folder := range conformanceFolders {
		var p, f, s int
		for _, r := range results[folder] {
			switch r.Status {
			case unified.Passed:
				p++
			case unified.Failed:
				f++
				if byCause[r.Category] == nil {
					byCause[r.Category] = map[string]int{}
				}
				byCause[r.Category][folder]++
			case unified.Skipped:
				s++
			}
		}
		tp, tf, ts = tp+p, tf+f, ts+s
		fmt.Fprintf(&b, "%-24s %7d %7d %7d %7d\n", folder, p, f, s, p+f+s)
	}
	fmt.Fprintf(&b, "%-24s %7d %7d %7d %7d\n", "total", tp, tf, ts, tp+tf+ts)

	type cause struct {
		name    string
		n       int
		folders string
	}
	var causes []cause
	for name, per := range byCause {
		c := cause{name: name}
		var parts []string
		for _, folder := range conformanceFolders {
			if n := per[folder]; n > 0 {
				c.n += n
				parts = append(parts, fmt.Sprintf("%s %d", folder, n))
			}
		}
		c.folders = strings.Join(parts, ", ")
		causes = append(causes, c)
	}
	sort.Slice(causes, func(i, j int) bool {
		if causes[i].n != causes[j].n {
			return causes[i].n > causes[j].n
		}
		return causes[i].name < causes[j].name
	})
	if len(causes) > 0 {
		b.WriteString("\nFailures by cause (first failure of each test; -v lists every test):\n")
		for _, c := range causes {
			fmt.Fprintf(&b, "%5d  %s  [%s]\n", c.n, c.name, c.folders)
		}
	}
	return b.String()
}
