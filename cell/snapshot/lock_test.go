package snapshot

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// testOwner tags the files the package's tests write.
var testOwner = Owner("cell-a", "r0")

// lockHelperEnv makes the test binary, re-executed by a test, lock the
// folder it names, print "locked" and wait to be killed (see TestMain).
const lockHelperEnv = "SNAPSHOT_LOCK_HELPER_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(lockHelperEnv); dir != "" {
		if _, err := LockDir(dir, Holder{Cell: "cell-child", Replica: "r9"}); err != nil {
			fmt.Println("error:", err)
			os.Exit(2)
		}
		fmt.Println("locked")
		select {} // held until SIGKILL
	}
	os.Exit(m.Run())
}

// startHolder runs a child process holding dir's lock and returns it once
// it holds it.
func startHolder(t *testing.T, dir string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), lockHelperEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "locked" {
		t.Fatalf("the holder said %q (%v)", line, err)
	}
	return cmd
}

// TestLockDirAcrossProcesses: a folder held by another process is refused
// with ErrLocked naming the folder and the holder's pid, cell and replica;
// once the holder is SIGKILLed the kernel releases the lock and the folder
// can be taken at once.
func TestLockDirAcrossProcesses(t *testing.T) {
	dir := t.TempDir()
	child := startHolder(t, dir)
	_, err := LockDir(dir, Holder{Cell: "cell-a", Replica: "r0"})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("LockDir of a held folder: %v, want ErrLocked", err)
	}
	for _, want := range []string{dir, "pid " + strconv.Itoa(child.Process.Pid), `cell "cell-child"`, `replica "r9"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	child.Wait()
	l, err := LockDir(dir, Holder{Cell: "cell-a", Replica: "r0"})
	if err != nil {
		t.Fatalf("LockDir after the holder died: %v", err)
	}
	defer l.Unlock()
	data, _ := os.ReadFile(filepath.Join(dir, LockFile))
	if !strings.Contains(string(data), fmt.Sprintf("pid=%d\n", os.Getpid())) || !strings.Contains(string(data), "cell=cell-a\n") {
		t.Fatalf("the lock file says %q, want this process", data)
	}
}

// TestLockDirInProcess: a second lock from the same process is refused as
// well (flock locks open files, not processes), and Unlock frees it.
func TestLockDirInProcess(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new")
	a, err := LockDir(dir, Holder{Cell: "cell-a", Replica: "r0"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LockDir(dir, Holder{Cell: "cell-b", Replica: "r0"}); !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), `cell "cell-a"`) {
		t.Fatalf("second LockDir: %v, want ErrLocked naming cell-a", err)
	}
	if err := a.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := a.Unlock(); err != nil {
		t.Fatalf("second Unlock: %v", err)
	}
	b, err := LockDir(dir, Holder{Cell: "cell-b", Replica: "r0"})
	if err != nil {
		t.Fatalf("LockDir after Unlock: %v", err)
	}
	b.Unlock()
}

// TestPruneKeepsOtherOwnersFiles: two replicas writing into one folder
// (as before the lock, or on a file system without flock) each keep their
// own newest files and never delete the other's files or temporary files;
// files of earlier versions count as the writer's own. LoadNewest reads
// the newest of any owner.
func TestPruneKeepsOtherOwnersFiles(t *testing.T) {
	id := testIdentity(t)
	dir := t.TempDir()
	orig := newCellState(t)
	feed(t, newWorkload(4, 2), 50, orig)
	src := Source{Index: orig.ix, Applier: orig.a}
	a, b := Owner("cell-a", "r0"), Owner("cell-a", "r1")
	t0 := time.Unix(1000, 0)
	legacy := filepath.Join(dir, FileName(t0, ""))
	if err := os.WriteFile(legacy, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	var wrote []string
	for i := 1; i <= 6; i++ {
		owner := a
		if i%2 == 0 {
			owner = b
		}
		p, _, err := WriteFile(dir, owner, 2, id, src, t0.Add(time.Duration(i)*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		wrote = append(wrote, p)
	}
	// b is writing (or crashed writing) and a crashed once: a's next
	// write removes only its own temporary file.
	bTmp := filepath.Join(dir, tmpPrefix+b+ownerSep+"123"+tmpSuffix)
	if err := os.WriteFile(bTmp, []byte("b writing"), 0o644); err != nil {
		t.Fatal(err)
	}
	aTmp := filepath.Join(dir, tmpPrefix+a+ownerSep+"456"+tmpSuffix)
	if err := os.WriteFile(aTmp, []byte("a crashed"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, _, err := WriteFile(dir, a, 2, id, src, t0.Add(7*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	wrote = append(wrote, p)
	files, _ := List(dir)
	// Each owner's two newest: a wrote 1, 3, 5, 7 and b 2, 4, 6; the
	// legacy file went with a's first prune.
	want := []string{wrote[6], wrote[5], wrote[4], wrote[3]}
	if !slices.Equal(files, want) {
		t.Fatalf("files %v, want %v", files, want)
	}
	if _, err := os.Stat(bTmp); err != nil {
		t.Fatalf("b's temporary file went: %v", err)
	}
	if _, err := os.Stat(aTmp); !os.IsNotExist(err) {
		t.Fatalf("a's leftover temporary file stayed: %v", err)
	}
	if _, path, _, err := LoadNewest(dir, id, 0); err != nil || path != wrote[6] {
		t.Fatalf("LoadNewest: %q %v, want %q", path, err, wrote[6])
	}
}

// TestOwnerTags: distinct replicas get distinct tags, none a prefix of
// another's file names, and the names parse back.
func TestOwnerTags(t *testing.T) {
	pairs := [][2]string{{"a", "b"}, {"a+b", ""}, {"a", "+b"}, {"a@x", "r"}, {"a.b", "r"}, {"a", "b.c"}, {"cell/1", "r 1"}, {"é", "%41"}, {"A", "b"}}
	seen := map[string][2]string{}
	for _, p := range pairs {
		o := Owner(p[0], p[1])
		if q, dup := seen[o]; dup {
			t.Fatalf("%v and %v share the tag %q", p, q, o)
		}
		seen[o] = p
		if strings.ContainsAny(o, "@./*?[]\\ ") {
			t.Fatalf("tag %q of %v has a separator or glob character", o, p)
		}
		got, ok := fileOwner(FileName(time.Unix(5, 0), o))
		if !ok || got != o {
			t.Fatalf("FileName of %q parses as %q %v", o, got, ok)
		}
	}
	for _, bad := range []string{"snapshot-123.snap", "snapshot-0000000000000000000x.snap", "snapshot-00000000000000000001@.snap", "x.snap"} {
		if _, ok := fileOwner(bad); ok {
			t.Fatalf("%q parsed as a snapshot name", bad)
		}
	}
}
