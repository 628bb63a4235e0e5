package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"buzzbox/internal/testexe"
)

// containerStartWait bounds how long the relay inside the image may take
// to answer its first request.
const containerStartWait = 30 * time.Second

// TestContainerfileScratchImage builds scripts/Containerfile's scratch
// image from the executable the tests built (the prebuilt stage: no
// registry is asked) with podman, as the README says, and runs --help,
// rg --version and buzz-relay --open from it.
//
// Where podman cannot start containers on this host (a hybrid cgroup
// tree, no CAP_SYS_RESOURCE for its rlimits) the same commands run by
// chroot on the image's mounted root file system, which still proves the
// image holds everything buzzbox needs; the log says which way it ran.
func TestContainerfileScratchImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a container image")
	}
	podman, err := exec.LookPath("podman")
	if err != nil {
		t.Skip("SKIP(loud): no podman (Debian package podman); scripts/Containerfile is not built")
	}
	if os.Geteuid() != 0 {
		t.Skip("SKIP(loud): the image build runs as root here (CI does); rootless podman needs subuid set up")
	}
	ctx := t.TempDir()
	data, err := os.ReadFile(testexe.Path(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ctx, "buzzbox"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	var tag [6]byte
	rand.Read(tag[:])
	image := "localhost/buzzbox-test:" + hex.EncodeToString(tag[:])
	// chroot isolation runs the image's RUN step without an OCI runtime.
	podmanRun(t, podman, "build", "--quiet", "--isolation", "chroot",
		"-f", filepath.Join(testexe.ModuleRoot(), "scripts", "Containerfile"),
		"--build-arg", "BINARY=prebuilt", "-t", image, ctx)
	t.Cleanup(func() { exec.Command(podman, "rmi", "--force", image).Run() })

	img := containerRunner(t, podman, image)
	if out := img.run(t, "--help"); !strings.Contains(out, "buzz-relay") {
		t.Errorf("--help in the image does not list buzz-relay:\n%s", out)
	}
	if out := img.run(t, "rg", "--version"); !strings.HasPrefix(out, "buzzbox") {
		t.Errorf("rg --version in the image = %q; want the build's version", out)
	}
	// The links buzzbox install laid are on the image's PATH.
	if out := img.run(t, "tree", "--version"); !strings.HasPrefix(out, "buzzbox") {
		t.Errorf("tree --version in the image = %q", out)
	}

	addr := freeLoopback(t)
	// chroot does not enter the image's WORKDIR, so name the data dir.
	relay := img.start(t, "buzz-relay", "--open", "--listen", addr, "--data", "/work/buzz-relay-data")
	deadline := time.Now().Add(containerStartWait)
	for {
		req, _ := http.NewRequest("GET", "http://"+addr+"/", nil)
		req.Header.Set("Accept", "application/nostr+json")
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			var body bytes.Buffer
			body.ReadFrom(resp.Body)
			resp.Body.Close()
			if !strings.Contains(body.String(), "buzz-relay") {
				t.Errorf("NIP-11 from the relay in the image = %s", body.String())
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("buzz-relay in the image did not answer on %s within %s: %v\n%s", addr, containerStartWait, err, relay)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// podmanRun runs podman and fails the test with its output on error.
func podmanRun(t *testing.T, podman string, args ...string) string {
	t.Helper()
	out, err := exec.Command(podman, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("podman %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// runner runs buzzbox commands in the image, one way or the other.
type runner struct {
	argv func(args ...string) []string
}

func (r runner) cmd(args ...string) *exec.Cmd {
	argv := r.argv(args...)
	return exec.Command(argv[0], argv[1:]...)
}

// run runs one command to its end and returns its stdout.
func (r runner) run(t *testing.T, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	c := r.cmd(args...)
	c.Stdout, c.Stderr = &stdout, &stderr
	if err := c.Run(); err != nil {
		t.Fatalf("%s in the image: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// start runs a long-running command until the test ends and returns its
// output so far, for failure messages.
func (r runner) start(t *testing.T, args ...string) *bytes.Buffer {
	t.Helper()
	out := new(bytes.Buffer) // one writer for both streams: exec copies them in one goroutine
	c := r.cmd(args...)
	c.Stdout, c.Stderr = out, out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	return out
}

// containerRunner picks podman run, or chroot on the mounted image when
// this host cannot start containers.
func containerRunner(t *testing.T, podman, image string) runner {
	viaPodman := runner{argv: func(args ...string) []string {
		return append([]string{podman, "run", "--rm", "--network", "host", image}, args...)
	}}
	probe, err := viaPodman.cmd("--version").CombinedOutput()
	if err == nil {
		return viaPodman
	}
	t.Logf("podman run cannot start containers on this host (%v: %s); running the image's root file system by chroot instead",
		err, strings.TrimSpace(string(probe)))
	chroot, err := exec.LookPath("chroot")
	if err != nil {
		t.Skip("SKIP(loud): podman run fails here and there is no chroot (coreutils)")
	}
	// A created (never started) container has a writable root, as a
	// running one would.
	id := strings.TrimSpace(podmanRun(t, podman, "create", image))
	t.Cleanup(func() { exec.Command(podman, "rm", "--force", id).Run() })
	root := strings.TrimSpace(podmanRun(t, podman, "mount", id))
	t.Cleanup(func() { exec.Command(podman, "umount", id).Run() })
	return runner{argv: func(args ...string) []string {
		return append([]string{chroot, root, "/buzzbox"}, args...)
	}}
}

// freeLoopback returns a loopback address no one listens on now.
func freeLoopback(t *testing.T) string {
	var lc net.ListenConfig
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return fmt.Sprint(ln.Addr())
}
