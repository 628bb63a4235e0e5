package devmcp_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"buzzbox/internal/testexe"

	"golang.org/x/sys/unix"
)

// Race sizes: the issue saw read_file leak after 1–107 calls as root and
// 12–20 as another user; with the old check-then-open code 1000 calls per
// tool under a stream of swaps found an open window 3 to 85 times.
const (
	// raceMinSwaps is how many directory/symlink swaps a run makes at least.
	raceMinSwaps = 10_000
	// raceMinCalls is how many tool calls a run makes at least.
	raceMinCalls = 1000
)

// raceTree is a home and a working tree for one racing server: ws/a is a
// real directory of the tree, ws/b a symlink to a place the tools may not
// reach (the owner's state dir for reads, a dir outside every write root
// for writes). A swapper exchanges the two names again and again.
type raceTree struct {
	home, ws, hidden, outside string
}

// newRaceTree builds the tree, owned by uid when the tests run as root.
func newRaceTree(t *testing.T, uid int) raceTree {
	t.Helper()
	base := t.TempDir()
	if uid != 0 {
		// t.TempDir makes its parent and itself 0700 for root; open them up.
		for _, d := range []string{filepath.Dir(base), base} {
			if err := os.Chmod(d, 0o777); err != nil {
				t.Fatal(err)
			}
		}
	}
	home := filepath.Join(base, "home")
	r := raceTree{
		home:    home,
		ws:      filepath.Join(home, "ws"),
		hidden:  filepath.Join(home, ".local", "state", "buzzbox", "proj-0123456789abcdef"),
		outside: filepath.Join(home, "outside"),
	}
	for _, d := range []string{filepath.Join(r.ws, "a"), r.hidden, r.outside, filepath.Join(base, "tmp")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	write := func(path string, data []byte) {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(r.hidden, "owner.key"), []byte(attackKey+"\n"))
	write(filepath.Join(r.ws, "a", "owner.key"), []byte("decoy\n"))
	// view_image: the hidden image is 3×3, the decoy 2×2.
	write(filepath.Join(r.hidden, "pic.png"), tinyPNG(t, 3))
	write(filepath.Join(r.ws, "a", "pic.png"), tinyPNG(t, 2))
	write(filepath.Join(r.outside, "notes.txt"), []byte("keep x\n"))
	write(filepath.Join(r.ws, "a", "notes.txt"), []byte("keep x\n"))
	if uid != 0 {
		if err := filepath.Walk(base, func(p string, _ os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, uid, uid)
		}); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

func tinyPNG(t *testing.T, side int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, side, side))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// startRacer starts a sandboxed server in r.ws as uid (0: as the tests
// run), skipping loudly where the kernel has no Landlock.
func startRacer(t *testing.T, r raceTree, uid int) *mcpProc {
	t.Helper()
	o := startOpts{dir: r.ws, tmp: filepath.Join(filepath.Dir(r.home), "tmp"), uid: uid,
		env: []string{"HOME=" + r.home, "XDG_STATE_HOME=" + filepath.Join(r.home, ".local", "state"), "XDG_CACHE_HOME=" + filepath.Join(r.home, ".cache")}}
	if uid != 0 {
		// A copy of the binary the other user can run.
		o.exe = filepath.Join(filepath.Dir(r.home), "buzz-dev-mcp")
		data, err := os.ReadFile(testexe.Path(t))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(o.exe, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return startSandboxed(t, o)
}

// swapper exchanges ws/a and ws/b until stopped, counting the swaps.
type swapper struct {
	swaps atomic.Int64
	stop  chan struct{}
	wg    sync.WaitGroup
	err   error
}

func startSwapper(t *testing.T, r raceTree, target string) *swapper {
	t.Helper()
	a, b := filepath.Join(r.ws, "a"), filepath.Join(r.ws, "b")
	if err := os.Symlink(target, b); err != nil {
		t.Fatal(err)
	}
	s := &swapper{stop: make(chan struct{})}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			select {
			case <-s.stop:
				return
			default:
			}
			if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE); err != nil {
				s.err = err
				return
			}
			s.swaps.Add(1)
		}
	}()
	t.Cleanup(s.halt)
	return s
}

// halt stops the swaps and puts the real directory back at ws/a.
func (s *swapper) halt() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	s.wg.Wait()
}

// race calls one tool until both the swaps and the calls reach their
// minimum, and counts the calls leak reports a leak for. Some calls must
// also succeed on the working tree's own file, or the race shows nothing.
func race(t *testing.T, p *mcpProc, s *swapper, call func(i int) map[string]any, leak func(res map[string]any) bool) {
	t.Helper()
	leaks, calls, fine := 0, 0, 0
	for ; calls < raceMinCalls || s.swaps.Load() < raceMinSwaps; calls++ {
		if s.err != nil {
			t.Fatalf("swapping: %v", s.err)
		}
		res := call(calls)
		switch {
		case leak(res):
			leaks++
		case res["isError"] != true:
			fine++
		}
	}
	s.halt()
	t.Logf("%d calls (%d did their work in the tree), %d swaps, %d leaks", calls, fine, s.swaps.Load(), leaks)
	if leaks > 0 {
		t.Errorf("%d of %d calls reached past the fence while a directory and a symlink swapped %d times", leaks, calls, s.swaps.Load())
	}
	if fine == 0 {
		t.Errorf("none of %d calls succeeded on the working tree's file; the race tested nothing", calls)
	}
}

// raceUsers are the users the race runs as: the tests' own and, as root,
// nobody too.
func raceUsers(t *testing.T) map[string]int {
	if os.Geteuid() != 0 {
		t.Log("SKIP(loud): tests run unprivileged, so the race runs as this user only; the run as root needs root")
		return map[string]int{"self": 0}
	}
	return map[string]int{"root": 0, "nobody": nobody}
}

// TestAttackFileToolsSwapRace: a command in the working tree exchanges a
// directory of the tree with a symlink to a place the file tools may not
// reach (renameat2 RENAME_EXCHANGE in a loop) while the model calls a file
// tool on a path through that directory. A check of the path followed by
// an open by name again lets some calls through; the tools must open
// what they checked. Here the test process does the swapping, from
// outside the server, as fast as it can.
func TestAttackFileToolsSwapRace(t *testing.T) {
	for user, uid := range raceUsers(t) {
		t.Run(user+"/read_file", func(t *testing.T) {
			r := newRaceTree(t, uid)
			p := startRacer(t, r, uid)
			s := startSwapper(t, r, r.hidden)
			race(t, p, s, func(int) map[string]any {
				return p.tool("read_file", map[string]any{"path": "a/owner.key"})
			}, func(res map[string]any) bool {
				txt, _ := text(t, res)
				return strings.Contains(txt, attackKey)
			})
		})
		t.Run(user+"/view_image", func(t *testing.T) {
			r := newRaceTree(t, uid)
			p := startRacer(t, r, uid)
			s := startSwapper(t, r, r.hidden)
			race(t, p, s, func(int) map[string]any {
				return p.tool("view_image", map[string]any{"source": "a/pic.png"})
			}, func(res map[string]any) bool {
				txt, _ := text(t, res)
				return strings.Contains(txt, "3×3")
			})
		})
		t.Run(user+"/str_replace_edit", func(t *testing.T) {
			r := newRaceTree(t, uid)
			p := startRacer(t, r, uid)
			s := startSwapper(t, r, r.outside)
			flip := []string{"x", "y"}
			race(t, p, s, func(i int) map[string]any {
				return p.tool("str_replace", map[string]any{"path": "a/notes.txt", "old_str": "keep " + flip[i%2], "new_str": "keep " + flip[(i+1)%2]})
			}, func(map[string]any) bool {
				return outsideChanged(t, r)
			})
		})
		t.Run(user+"/str_replace_create", func(t *testing.T) {
			r := newRaceTree(t, uid)
			p := startRacer(t, r, uid)
			s := startSwapper(t, r, r.outside)
			race(t, p, s, func(i int) map[string]any {
				return p.tool("str_replace", map[string]any{"path": fmt.Sprintf("a/new-%d.txt", i), "old_str": "", "new_str": "planted\n"})
			}, func(map[string]any) bool {
				return outsideChanged(t, r)
			})
		})
	}
}

// renameat2Number is the renameat2 system call's number for perl's
// syscall, or 0 where this test does not know it.
func renameat2Number() int {
	switch runtime.GOARCH {
	case "amd64":
		return 316
	case "arm64", "riscv64", "loong64":
		return 276
	}
	return 0
}

// TestAttackFileToolsShellSwapRace is the issue's own attack: the swaps
// come from a command the model runs, inside the shell's sandbox (perl
// calling renameat2 RENAME_EXCHANGE in a loop), while read_file is called
// on a path through the swapped directory.
func TestAttackFileToolsShellSwapRace(t *testing.T) {
	if _, err := exec.LookPath("perl"); err != nil {
		t.Skip("SKIP(loud): no perl to swap names from inside the sandbox")
	}
	sysno := renameat2Number()
	if sysno == 0 {
		t.Skip("SKIP(loud): renameat2's number on " + runtime.GOARCH + " is not known here")
	}
	for user, uid := range raceUsers(t) {
		t.Run(user, func(t *testing.T) {
			r := newRaceTree(t, uid)
			b := filepath.Join(r.ws, "b")
			if err := os.Symlink(r.hidden, b); err != nil {
				t.Fatal(err)
			}
			if uid != 0 {
				if err := os.Lchown(b, uid, uid); err != nil {
					t.Fatal(err)
				}
			}
			p := startRacer(t, r, uid)
			// The loop creates ws/started, then ws/enough after the minimum
			// of swaps, and stops when the test creates ws/stop, or after a
			// minute.
			script := fmt.Sprintf(`perl -e 'sub touch { open(my $f, ">", $_[0]) or die "$_[0]: $!"; close $f } touch("started"); `+
				`my ($a, $b, $n) = ("a", "b", 0); my $end = time + 60; `+
				`until (-e "stop" || time > $end) { for (1..100) { syscall(%d, -100, $a, -100, $b, 2) == 0 or die "renameat2: $!"; $n++ } touch("enough") if $n == %d } print "$n\n"'`,
				sysno, raceMinSwaps)
			_, reply := p.request("tools/call", map[string]any{"name": "shell", "arguments": map[string]any{"command": script, "timeout_ms": 120000}})
			for !exists(filepath.Join(r.ws, "started")) {
				select {
				case m := <-reply:
					t.Fatalf("the swapping command ended before it started: %v", m)
				case <-time.After(10 * time.Millisecond):
				}
			}
			leaks, fine, calls := 0, 0, 0
			for ; calls < raceMinCalls || !exists(filepath.Join(r.ws, "enough")); calls++ {
				select {
				case m := <-reply:
					t.Fatalf("the swapping command ended early: %v", m)
				default:
				}
				txt, isErr := text(t, p.tool("read_file", map[string]any{"path": "a/owner.key"}))
				switch {
				case strings.Contains(txt, attackKey):
					leaks++
				case !isErr:
					fine++
				}
			}
			if err := os.WriteFile(filepath.Join(r.ws, "stop"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			res := result(t, p.await(reply, "shell"))
			out, _ := text(t, res)
			var sh shellOut
			if err := json.Unmarshal([]byte(out), &sh); err != nil || sh.ExitCode != 0 {
				t.Fatalf("swapping command: %s", out)
			}
			swaps, _ := strconv.Atoi(strings.TrimSpace(sh.Stdout))
			t.Logf("%d calls (%d did their work in the tree), %d swaps by the sandboxed shell, %d leaks", calls, fine, swaps, leaks)
			if swaps < raceMinSwaps {
				t.Errorf("the shell swapped %d times during the calls; want at least %d", swaps, raceMinSwaps)
			}
			if leaks > 0 {
				t.Errorf("read_file returned the owner key %d times of %d while the sandboxed shell swapped names", leaks, calls)
			}
			if fine == 0 {
				t.Errorf("no read_file call succeeded on the working tree's file; the race tested nothing")
			}
		})
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// outsideChanged reports whether the dir outside every write root holds
// anything but notes.txt as it was, and puts it back if so, so that each
// leak counts once.
func outsideChanged(t *testing.T, r raceTree) bool {
	t.Helper()
	entries, err := os.ReadDir(r.outside)
	if err != nil {
		t.Fatal(err)
	}
	changed := false
	for _, e := range entries {
		p := filepath.Join(r.outside, e.Name())
		if e.Name() != "notes.txt" {
			os.Remove(p)
			changed = true
			continue
		}
		if b, err := os.ReadFile(p); err != nil || string(b) != "keep x\n" {
			os.WriteFile(p, []byte("keep x\n"), 0o600)
			changed = true
		}
	}
	return changed
}
