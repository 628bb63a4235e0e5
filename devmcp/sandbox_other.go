//go:build !linux

package devmcp

import (
	"fmt"
	"os/exec"

	"buzzbox/internal/proc"
)

// landlockABI is 0: Landlock is Linux's.
func landlockABI() int { return 0 }

// sandboxExec refuses: there is no sandbox to apply here.
func sandboxExec(_ []string, env proc.Env) int {
	fmt.Fprintln(env.Err(), "buzz-dev-mcp: sandbox: Landlock is Linux-only; set BUZZ_SHELL_SANDBOX=off")
	return exitSandboxFailed
}

// canOwnProc is false: PID namespaces are Linux's.
func canOwnProc() bool { return false }

func setNamespaces(*exec.Cmd) {}

// canReap is false: child subreapers are Linux's.
func canReap() bool { return false }

// nsArg is ownProcArg; canOwnProc keeps it unused here.
func nsArg() string { return ownProcArg }
