package cli
import ("testing";"fmt";"strings";"time";"os";"os/exec";"syscall";"io";"github.com/nbd-wtf/go-nostr")
func TestZZListMem(t *testing.T){
	const n = 10000
	me := newKey(t)
	rl := startPlainRelay(t, false)
	base := time.Now().Unix() - n
	for i := range n {
		rl.put(t, signed(t, me, kindStream, fmt.Sprintf("message %d %s", i, strings.Repeat("x", 200)), nostr.Tags{{"h", testChannel}}, base+int64(i/3)))
	}
	cmd := exec.Command(buzzExe(t), "messages", "list", "--channel", testChannel)
	cmd.Env = []string{"BUZZ_RELAY_URL=" + rl.base, "BUZZ_PRIVATE_KEY=" + me.sk, "GODEBUG=gctrace=1"}
	cmd.Stdout = io.Discard
	cmd.Stderr = os.Stderr
	cmd.Run()
	t.Log("maxrss KiB", cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss)
}
