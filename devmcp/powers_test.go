//go:build linux

package devmcp_test

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"net"
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

// probeSource is a helper the attack below builds and runs in the
// sandboxed shell: it opens an AF_PACKET socket on lo (what captured a
// private channel's traffic on its way to a member), a raw IP socket, and
// a TCP connection to the address in its argument, and prints one line
// for each.
const probeSource = `package main

import (
	"fmt"
	"net"
	"os"
	"syscall"
)

func main() {
	// ETH_P_ALL in network byte order.
	fd, err := syscall.Socket(syscall.AF_PACKET, syscall.SOCK_RAW, 0x0300)
	if err == nil {
		lo, _ := net.InterfaceByName("lo")
		if lo != nil {
			err = syscall.Bind(fd, &syscall.SockaddrLinklayer{Protocol: 0x0300, Ifindex: lo.Index})
		}
		syscall.Close(fd)
	}
	fmt.Println("packet:", result(err))
	fd, err = syscall.Socket(syscall.AF_INET, syscall.SOCK_RAW, syscall.IPPROTO_TCP)
	if err == nil {
		syscall.Close(fd)
	}
	fmt.Println("raw:", result(err))
	c, err := net.Dial("tcp", os.Args[1])
	if err == nil {
		b := make([]byte, 4)
		_, err = c.Read(b)
		c.Close()
		if err == nil && string(b) != "pong" {
			err = fmt.Errorf("read %q", b)
		}
	}
	fmt.Println("tcp:", result(err))
}

func result(err error) string {
	if err != nil {
		return "failed: " + err.Error()
	}
	return "ok"
}
`

// buildProbe builds probeSource into dir and returns the executable.
func buildProbe(t *testing.T, dir string) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("SKIP(loud): no go tool to build the socket probe with")
	}
	src := filepath.Join(dir, "probe.go")
	if err := os.WriteFile(src, []byte(probeSource), 0o644); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "probe")
	cmd := exec.Command(goTool, "build", "-o", exe, src)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GO111MODULE=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the probe: %v\n%s", err, out)
	}
	return exe
}

// TestAttackSandboxRootPowers: as root, a command keeps no capability (no
// raw socket to sniff loopback with, no device node, no network or host
// configuration), cannot regain one (no_new_privs), and renames only a
// UTS namespace of its own; outbound TCP and git still work.
func TestAttackSandboxRootPowers(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIP(loud): the shell's capabilities are root's to lose; run the tests as root to check them")
	}
	probe := buildProbe(t, t.TempDir())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // ends when the listener is closed
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("pong"))
			c.Close()
		}
	}()
	hostUTS, err := os.Readlink("/proc/self/ns/uts")
	if err != nil {
		t.Fatal(err)
	}
	hostName, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	p := startSandboxed(t, startOpts{})
	// hostname is only tried in a UTS namespace of the command's own: were
	// it the host's, a regression would rename the machine.
	out := runShell(t, p, map[string]any{"command": `grep -E '^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs):' /proc/self/status
if [ "$(readlink /proc/self/ns/uts)" = "` + hostUTS + `" ]; then echo "uts: host"; else echo "uts: own"; hostname evil 2>/dev/null; echo "sethostname: $?"; fi
mknod "$TMPDIR/mem" c 1 1 2>/dev/null; echo "mknod: $?"
ip link set lo mtu "$(cat /sys/class/net/lo/mtu)" 2>/dev/null; echo "ip link: $?"
` + probe + ` ` + ln.Addr().String() + `
git init -q g && git -C g -c user.name=n -c user.email=n@e -c commit.gpgSign=false commit -q --allow-empty -m ok && git -C g log --format=git:%s`})
	got := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(out.Stdout))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok {
			got[k] = strings.TrimSpace(v)
		}
	}
	for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
		if got[k] != "0000000000000000" {
			t.Errorf("%s = %q; want no capability", k, got[k])
		}
	}
	if got["NoNewPrivs"] != "1" {
		t.Errorf("NoNewPrivs = %q; want 1", got["NoNewPrivs"])
	}
	if got["uts"] != "own" {
		t.Errorf("the command is in the host's UTS namespace")
	}
	for _, k := range []string{"sethostname", "mknod", "ip link"} {
		if v, ok := got[k]; ok && v == "0" {
			t.Errorf("%s succeeded in the sandbox", k)
		}
	}
	for _, k := range []string{"packet", "raw"} {
		if !strings.HasPrefix(got[k], "failed") {
			t.Errorf("%s socket: %q; want it refused", k, got[k])
		}
	}
	if got["tcp"] != "ok" || got["git"] != "ok" {
		t.Errorf("outbound TCP %q, git %q; want both working (stderr %q)", got["tcp"], got["git"], out.Stderr)
	}
	if h, _ := os.Hostname(); h != hostName {
		t.Errorf("the host is renamed %q (was %q)", h, hostName)
	}
}

// escapees is the command that leaves two processes behind outside its
// process group, one in a session of its own (setsid) and one orphaned by
// a double fork, each a sleep with a duration no other process has; it
// goes on once both run.
func escapees(a, b int) string {
	return fmt.Sprintf(`setsid sh -c 'touch "$TMPDIR/a"; exec sleep %d' </dev/null >/dev/null 2>&1 &
(sh -c 'sh -c "touch \"\$TMPDIR/b\"; exec sleep %d" </dev/null >/dev/null 2>&1 &' &)
while [ ! -e "$TMPDIR/a" ] || [ ! -e "$TMPDIR/b" ]; do sleep 0.01; done
sleep 0.1`, a, b)
}

// sleepers finds the live processes running `sleep <n>` for each n.
func sleepers(ns ...int) []int {
	want := map[string]bool{}
	for _, n := range ns {
		want["sleep\x00"+strconv.Itoa(n)+"\x00"] = true
	}
	names, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var pids []int
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil || !want[string(b)] {
			continue
		}
		pid, _ := strconv.Atoi(strings.Split(name, "/")[2])
		if alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// waitSleepers waits until n sleepers of ns run.
func waitSleepers(t *testing.T, n int, ns ...int) []int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if pids := sleepers(ns...); len(pids) >= n {
			return pids
		}
		if time.Now().After(deadline) {
			t.Fatalf("the command's background sleeps never started")
		}
		time.Sleep(10 * time.Millisecond) // other processes start them; nothing to wait on
	}
}

// TestAttackShellEscapees: a command detaches processes from its group
// (setsid, a double fork). None outlives the call: not its end, its
// timeout, its cancellation, nor the server's exit or death, whether the
// server runs as root or as another user.
func TestAttackShellEscapees(t *testing.T) {
	users := []string{"self"}
	if os.Geteuid() == 0 {
		users = append(users, "nobody", "nobody-without-userns", "root-without-namespaces")
	}
	// trap: the command, told to stop (SIGTERM, on its timeout), detaches
	// more processes as fast as it can while it is being stopped.
	ends := []string{"return", "timeout", "trap", "cancel", "exit", "kill"}
	for _, user := range users {
		for _, end := range ends {
			t.Run(user+"/"+end, func(t *testing.T) {
				a, b := 900000+rand.IntN(90000), 990000+rand.IntN(9000)
				t.Cleanup(func() {
					for _, pid := range sleepers(a, b) {
						syscall.Kill(pid, syscall.SIGKILL) // when the test fails
					}
				})
				var p *mcpProc
				if user == "nobody-without-userns" {
					p = startWithoutNamespaces(t, false)
				} else if user == "root-without-namespaces" {
					p = startWithoutNamespaces(t, true)
				} else if user == "nobody" {
					home := t.TempDir()
					if err := os.Chmod(home, 0o777); err != nil {
						t.Fatal(err)
					}
					p, _ = startUnprivilegedEnv(t, []string{"BUZZ_SHELL_SANDBOX=landlock", "HOME=" + home})
				} else {
					p = startSandboxed(t, startOpts{})
				}
				if strings.Contains(p.stderrText(), "has no Landlock") {
					t.Skip("SKIP(loud): this kernel has no Landlock")
				}
				if s := p.stderrText(); !strings.Contains(user, "without") && strings.Contains(s, "of its own here") {
					t.Skipf("SKIP(loud): this kernel refuses the sandbox's namespaces here:\n%s", s)
				}
				cmd := escapees(a, b)
				args := map[string]any{"command": cmd + "\nsleep 1000", "timeout_ms": 600000}
				switch end {
				case "return":
					args["command"] = cmd
				case "timeout":
					args["timeout_ms"] = 3000
				case "trap":
					args["command"] = fmt.Sprintf(`trap 'while :; do setsid sleep %d </dev/null >/dev/null 2>&1 & done' TERM`+"\n", a) + args["command"].(string)
					args["timeout_ms"] = 3000
				}
				id, reply := p.request("tools/call", map[string]any{"name": "shell", "arguments": args})
				if end != "return" {
					waitSleepers(t, 2, a, b)
				}
				switch end {
				case "return", "timeout", "trap":
					p.await(reply, "shell")
				case "cancel":
					p.sendLine(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + strconv.Itoa(id) + `,"reason":"test"}}`)
					p.waitLog("msg=cancelled")
				case "exit":
					p.stdin.Close()
					<-p.done
				case "kill":
					p.cmd.Process.Kill()
					<-p.done
				}
				deadline := time.Now().Add(15 * time.Second)
				for len(sleepers(a, b)) > 0 {
					if time.Now().After(deadline) {
						t.Fatalf("after the call's %s, the detached sleeps %v still run:\n%s", end, sleepers(a, b), procLines(sleepers(a, b)))
					}
					time.Sleep(10 * time.Millisecond) // other processes' deaths; nothing to wait on
				}
			})
		}
	}
}

// procLines describes each process for a failure: its status lines that
// say where it lives (state, parent, namespaces' pids, capabilities) and
// its parent's command line.
func procLines(pids []int) string {
	var out strings.Builder
	for _, pid := range pids {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
		fmt.Fprintf(&out, "pid %d:", pid)
		for _, l := range strings.Split(string(b), "\n") {
			for _, k := range []string{"State:", "PPid:", "NSpid:", "NSpgid:", "NSsid:", "CapEff:"} {
				if strings.HasPrefix(l, k) {
					fmt.Fprintf(&out, " %s", strings.Join(strings.Fields(l), " "))
				}
			}
		}
		if ppid := procParent(string(b)); ppid > 0 {
			cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(ppid) + "/cmdline")
			fmt.Fprintf(&out, " parent %q", strings.ReplaceAll(string(cmd), "\x00", " "))
		}
		out.WriteString("\n")
	}
	return out.String()
}

// procParent reads PPid from a /proc/PID/status text.
func procParent(status string) int {
	for _, l := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(l, "PPid:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

// startWithoutNamespaces starts the sandboxed server where it may create
// none of the sandbox's namespaces, so that its commands run under the
// child subreaper instead. As nobody, that is in a user namespace of the
// test's own whose limit of nested user namespaces is 0, as a kernel
// that forbids them to unprivileged users would; as root, it is without
// CAP_SYS_ADMIN, as in a container. The tests must run as root.
func startWithoutNamespaces(t *testing.T, root bool) *mcpProc {
	t.Helper()
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("SKIP(loud): no setpriv to drop to nobody with in a user namespace")
	}
	base := t.TempDir()
	for _, d := range []string{filepath.Dir(base), base} {
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	exe := filepath.Join(base, "buzz-dev-mcp")
	data, err := os.ReadFile(testexe.Path(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, data, 0o755); err != nil {
		t.Fatal(err)
	}
	dir, tmp, home := filepath.Join(base, "work"), filepath.Join(base, "tmp"), filepath.Join(base, "home")
	for _, d := range []string{dir, tmp, home} {
		if err := os.Mkdir(d, 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("/bin/sh", "-c", `echo 0 > /proc/sys/user/max_user_namespaces && exec "$0" --reuid 65534 --regid 65534 --clear-groups "$1"`, setpriv, exe)
	ids := []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}, {ContainerID: nobody, HostID: nobody, Size: 1}}
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER, UidMappings: ids, GidMappings: ids, GidMappingsEnableSetgroups: true}
	if root {
		cmd = exec.Command(setpriv, "--bounding-set=-sys_admin", "--inh-caps=-sys_admin", exe)
	}
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "BUZZ_") && !strings.HasPrefix(kv, "NOSTR_") && !strings.HasPrefix(kv, "HOME=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "TMPDIR="+tmp, "HOME="+home, "BUZZ_DEV_MCP_LOG=debug", "GODEBUG=execwait=2", "BUZZ_SHELL_SANDBOX=landlock")
	p := startCmd(t, cmd)
	p.initialize("2025-11-25")
	if !strings.Contains(p.stderrText(), "a child subreaper stops what a command detaches") {
		t.Fatalf("the server did not fall back to the child subreaper:\n%s", p.stderrText())
	}
	return p
}

// TestSandboxUnprivilegedWorks: as a user other than root, in the user
// namespace the sandbox gives it, a command keeps its uid, owns the files
// it writes and does a developer's work (git) in the working tree.
func TestSandboxUnprivilegedWorks(t *testing.T) {
	home := t.TempDir()
	if err := os.Chmod(home, 0o777); err != nil {
		t.Fatal(err)
	}
	p, dir := startUnprivilegedEnv(t, []string{"BUZZ_SHELL_SANDBOX=landlock", "HOME=" + home})
	if strings.Contains(p.stderrText(), "has no Landlock") {
		t.Skip("SKIP(loud): this kernel has no Landlock")
	}
	out := runShell(t, p, map[string]any{"command": `set -e
id -u
echo hello > f.txt
git init -q . && git add f.txt && git -c user.name=n -c user.email=n@e -c commit.gpgSign=false commit -qm first && git log --format=%s`})
	uid := os.Geteuid()
	if uid == 0 {
		uid = nobody
	}
	if out.Stdout != fmt.Sprintf("%d\nfirst\n", uid) || out.ExitCode != 0 {
		t.Errorf("work as uid %d = %+v", uid, out)
	}
	// In the user namespace the entry held CAP_SYS_ADMIN and CAP_SETPCAP
	// to mount /proc and cut the bounding set; the command keeps neither.
	if !strings.Contains(p.stderrText(), "of its own here") {
		caps := runShell(t, p, map[string]any{"command": `grep -E '^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs):' /proc/self/status | tr -d ' \t'`}).Stdout
		if want := "CapInh:0000000000000000\nCapPrm:0000000000000000\nCapEff:0000000000000000\nCapBnd:0000000000000000\nCapAmb:0000000000000000\nNoNewPrivs:1\n"; caps != want {
			t.Errorf("the command's capabilities in its user namespace:\n%s\nwant none, and no_new_privs", caps)
		}
	}
	st, err := os.Stat(filepath.Join(dir, "f.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if owner := st.Sys().(*syscall.Stat_t).Uid; int(owner) != uid {
		t.Errorf("f.txt is owned by uid %d; want %d", owner, uid)
	}
}
