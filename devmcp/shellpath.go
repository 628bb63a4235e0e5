package devmcp

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// envShell names the variable that picks the shell for the shell tool.
const envShell = "BUZZ_SHELL"

// shellInfo is the shell every shell call runs, resolved once at start-up.
type shellInfo struct {
	path string // absolute path of the executable
	name string // display name: the lowercased file stem, e.g. "bash"
	flag string // the flag that makes it run one command string
	err  error  // set when no shell was found; then only err is meaningful
}

// resolveShell finds the shell: $BUZZ_SHELL when it names an existing file
// (a path, or a bare name searched in pathList), else bash, else sh, on
// pathList or in the usual places. In an empty root with none of them the
// result carries an error naming everything that was tried, and the other
// tools go on working.
func resolveShell(buzzShell, pathList, cwd string) shellInfo {
	return resolveShellIn(buzzShell, pathList, cwd, []string{"/bin", "/usr/bin", "/usr/local/bin"})
}

// resolveShellIn is resolveShell with the fallback directories given.
func resolveShellIn(buzzShell, pathList, cwd string, fallbackDirs []string) shellInfo {
	var tried []string
	if buzzShell != "" {
		if p := findProgram(buzzShell, pathList, cwd, false); p != "" {
			return describeShell(p)
		}
		tried = append(tried, "$"+envShell+"="+buzzShell+" (not found)")
	} else {
		tried = append(tried, "$"+envShell+" (unset)")
	}
	for _, name := range []string{"bash", "sh"} {
		if p := findProgram(name, pathList, cwd, true); p != "" {
			return describeShell(p)
		}
		tried = append(tried, name+" in PATH")
		for _, dir := range fallbackDirs {
			p := filepath.Join(dir, name)
			if isExecutableFile(p) {
				return describeShell(p)
			}
			tried = append(tried, p)
		}
	}
	return shellInfo{name: "bash", err: errors.New("no shell found: tried " + strings.Join(tried, ", ") +
		"; PATH=" + pathList + ". The shell tool needs bash or sh: install one, or set " + envShell +
		" to a shell's path and restart the server. read_file, str_replace, view_image and todo work without it.")}
}

// findProgram looks name up: a name with a slash is a path (relative to
// cwd); a bare name is searched in each directory of pathList, first regular
// file wins. needExec also requires an execute bit.
func findProgram(name, pathList, cwd string, needExec bool) string {
	ok := isRegularFile
	if needExec {
		ok = isExecutableFile
	}
	if strings.ContainsRune(name, '/') {
		if !filepath.IsAbs(name) {
			name = filepath.Join(cwd, name)
		}
		if ok(name) {
			return name
		}
		return ""
	}
	for _, dir := range filepath.SplitList(pathList) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, name)
		if !filepath.IsAbs(p) {
			p = filepath.Join(cwd, p)
		}
		if ok(p) {
			return p
		}
	}
	return ""
}

func isRegularFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

func isExecutableFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0
}

// describeShell derives the display name and command flag from the file.
func describeShell(path string) shellInfo {
	stem := strings.ToLower(filepath.Base(path))
	stem = strings.TrimSuffix(stem, filepath.Ext(stem))
	flag := "-c"
	switch stem {
	case "cmd":
		flag = "/C"
	case "powershell", "pwsh":
		flag = "-Command"
	}
	return shellInfo{path: path, name: stem, flag: flag}
}
