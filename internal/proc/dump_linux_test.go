package proc_test

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"buzzbox/internal/testexe"
)

// nobody is the uid the test drops to when it runs as root.
const nobody = 65534

// TestAttackSecretHoldersDumpable: each identity that holds a secret in
// its environment (the provider key, the agent key, the owner key) runs
// as the built binary with one, and a process of the same user tries to
// read its /proc/PID/environ. Each makes itself non-dumpable first thing,
// which hands its /proc files to root and refuses the read.
func TestAttackSecretHoldersDumpable(t *testing.T) {
	const secret = "sk-dumpable-test-secret-93"
	base := t.TempDir()
	exe := testexe.Path(t)
	var cred *syscall.SysProcAttr
	if os.Geteuid() == 0 {
		// t.TempDir makes its parent and itself 0700 for root; open them up
		// and give nobody a copy of the binary.
		for _, d := range []string{filepath.Dir(base), base} {
			if err := os.Chmod(d, 0o777); err != nil {
				t.Fatal(err)
			}
		}
		data, err := os.ReadFile(exe)
		if err != nil {
			t.Fatal(err)
		}
		exe = filepath.Join(base, "buzzbox")
		if err := os.WriteFile(exe, data, 0o755); err != nil {
			t.Fatal(err)
		}
		cred = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	}
	provider := []string{"BUZZ_AGENT_PROVIDER=openai", "OPENAI_COMPAT_API_KEY=" + secret, "OPENAI_COMPAT_MODEL=m", "OPENAI_COMPAT_BASE_URL=http://127.0.0.1:1"}
	for _, c := range []struct {
		args []string
		env  []string
	}{
		{[]string{"buzz-dev-mcp"}, []string{"BUZZ_PRIVATE_KEY=" + secret}},
		{[]string{"buzz-agent"}, provider},
		{[]string{"buzz-acp", "--relay-url", "ws://127.0.0.1:1", "--agent-command", "buzz-agent"}, []string{"BUZZ_PRIVATE_KEY=" + strings.Repeat("0", 63) + "5", "BUZZ_TEST_SECRET=" + secret}},
		{[]string{"up", "--listen", "127.0.0.1:0"}, append(provider, "XDG_STATE_HOME="+filepath.Join(base, "state"))},
	} {
		t.Run(c.args[0], func(t *testing.T) {
			dir := filepath.Join(base, c.args[0])
			if err := os.Mkdir(dir, 0o777); err != nil {
				t.Fatal(err)
			}
			os.Chmod(dir, 0o777)
			cmd := exec.Command(exe, c.args...)
			cmd.Dir = dir
			cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=" + dir}, c.env...)
			cmd.SysProcAttr = cred
			stdin, err := cmd.StdinPipe() // held open: the stdio identities wait on it
			if err != nil {
				t.Fatal(err)
			}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stderr = t.Output()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			ready := make(chan struct{})
			go func() { // ends at EOF, when the process exits
				r := bufio.NewReader(stdout)
				for {
					line, err := r.ReadString('\n')
					if strings.HasPrefix(line, "buzzbox is up") {
						close(ready)
					}
					if err != nil {
						return
					}
				}
			}()
			if c.args[0] == "up" {
				// Up stops cleanly on SIGTERM once the harness runs.
				select {
				case <-ready:
				case <-time.After(60 * time.Second):
					t.Fatal("buzzbox up never said it is up")
				}
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }() // ends when the process is stopped below
			t.Cleanup(func() {
				stdin.Close()
				cmd.Process.Signal(syscall.SIGTERM)
				select {
				case <-exited:
				case <-time.After(20 * time.Second):
					cmd.Process.Kill()
					<-exited
				}
			})
			environ := "/proc/" + strconv.Itoa(cmd.Process.Pid) + "/environ"
			// Non-dumpable hands the process's /proc files to root.
			deadline := time.Now().Add(20 * time.Second)
			for {
				var st syscall.Stat_t
				if err := syscall.Stat(environ, &st); err == nil && st.Uid == 0 {
					break
				}
				select {
				case err := <-exited:
					t.Fatalf("%v exited before the check: %v", c.args, err)
				default:
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s stayed owned by the process's user: %v is dumpable", environ, c.args)
				}
				time.Sleep(20 * time.Millisecond)
			}
			attack := exec.Command("cat", environ)
			attack.SysProcAttr = cred
			out, err := attack.CombinedOutput()
			var ee *exec.ExitError
			if strings.Contains(string(out), secret) || !errors.As(err, &ee) {
				t.Errorf("a same-user process read %s: %v", environ, err)
			}
		})
	}
}
