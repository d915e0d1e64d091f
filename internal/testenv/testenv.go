// Package testenv finds what tests need from outside the repository: the
// shared corpus of real pages, feeds and profiles, and external programs
// such as rapper or newsboat. When one is missing the test is skipped with
// a message, except that under CI=true, where .ci/run installs them, a
// missing program fails the test.
package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// InCI reports whether the tests run under continuous integration.
func InCI() bool { return os.Getenv("CI") == "true" }

// Corpus returns the directory of the shared test corpus (or of sub, a
// path inside it): $CHANGEDIGEST_CORPUS, else ../shared/corpus beside the
// repository. It skips the test, saying so, when that is absent.
func Corpus(tb testing.TB, sub ...string) string {
	tb.Helper()
	dir := os.Getenv("CHANGEDIGEST_CORPUS")
	if dir == "" {
		dir = filepath.Join(repoRoot(), "..", "shared", "corpus")
	}
	dir = filepath.Join(append([]string{dir}, sub...)...)
	if _, err := os.Stat(dir); err != nil {
		tb.Skipf("test corpus %s is absent: %v (skipping)", dir, err)
	}
	return dir
}

// Schema returns the path of a schema in the shared schemas directory
// (../shared/schemas beside the repository, or $CHANGEDIGEST_SCHEMAS),
// such as "atom.rnc", the normative RELAX NG schema of RFC 4287. It
// skips the test, saying so, when the file is absent.
func Schema(tb testing.TB, name string) string {
	tb.Helper()
	dir := os.Getenv("CHANGEDIGEST_SCHEMAS")
	if dir == "" {
		dir = filepath.Join(repoRoot(), "..", "shared", "schemas")
	}
	p := filepath.Join(dir, name)
	if _, err := os.Stat(p); err != nil {
		tb.Skipf("schema %s is absent: %v (skipping)", p, err)
	}
	return p
}

// Tool returns the path of an external program, skipping the test when it
// is not installed (failing it under CI).
func Tool(tb testing.TB, name string) string {
	tb.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		missing(tb, "%s is not installed: %v", name, err)
	}
	return p
}

func missing(tb testing.TB, format string, args ...any) {
	tb.Helper()
	if InCI() {
		tb.Fatalf(format, args...)
	}
	tb.Skipf(format+" (skipping)", args...)
}

// repoRoot is the directory holding go.mod, found from this file's path.
func repoRoot() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		wd, _ := os.Getwd()
		return wd
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Python returns the system Python (/usr/bin/python3) when it can import
// module, else skips the test (fails it under CI=true). Debian packages
// such as python3-feedparser serve the system Python only.
func Python(tb testing.TB, module string) string {
	tb.Helper()
	const py = "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import "+module).Run(); err != nil {
		missing(tb, "%s cannot import %s: %v", py, module, err)
	}
	return py
}

// SmallFS mounts a tmpfs of size bytes on a new temporary directory and
// returns the directory; it is unmounted when the test ends. Mounting
// needs root (or CAP_SYS_ADMIN): where it is refused the test is skipped,
// except under CI=true, where it fails.
func SmallFS(tb testing.TB, size int64) string {
	tb.Helper()
	dir := tb.TempDir()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+strconv.FormatInt(size, 10), "tmpfs", dir).CombinedOutput()
	if err != nil {
		missing(tb, "cannot mount a small filesystem (tmpfs) on %s: %v: %s", dir, err, strings.TrimSpace(string(out)))
	}
	tb.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			tb.Errorf("unmount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// ResizeFS changes the size of a filesystem SmallFS mounted.
func ResizeFS(tb testing.TB, dir string, size int64) {
	tb.Helper()
	out, err := exec.Command("mount", "-o", "remount,size="+strconv.FormatInt(size, 10), dir).CombinedOutput()
	if err != nil {
		tb.Fatalf("resize the filesystem on %s: %v: %s", dir, err, out)
	}
}

// FreeSpace is the bytes free on the filesystem holding dir.
func FreeSpace(tb testing.TB, dir string) int64 {
	tb.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		tb.Fatal(err)
	}
	return int64(st.Bavail) * int64(st.Bsize)
}
