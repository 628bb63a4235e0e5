package rg

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"

	"buzzbox/internal/proc"
	"buzzbox/shimtools/ignore"
)

// globalExcludes loads git's global excludes file: core.excludesFile from
// $XDG_CONFIG_HOME/git/config or ~/.gitconfig, else
// $XDG_CONFIG_HOME/git/ignore (~/.config/git/ignore). Nil when absent.
func globalExcludes(env proc.Env) *ignore.Matcher {
	home := env.Getenv("HOME")
	xdg := env.Getenv("XDG_CONFIG_HOME")
	if xdg == "" && home != "" {
		xdg = filepath.Join(home, ".config")
	}
	var path string
	for _, cfg := range []string{filepath.Join(home, ".gitconfig"), filepath.Join(xdg, "git", "config")} {
		if home == "" && strings.HasPrefix(cfg, ".gitconfig") {
			continue
		}
		if p := excludesFromConfig(cfg, home); p != "" {
			path = p // later files override earlier ones, as in git
		}
	}
	if path == "" {
		if xdg == "" {
			return nil
		}
		path = filepath.Join(xdg, "git", "ignore")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, ignore.MaxIgnoreFile))
	if err != nil {
		return nil
	}
	return ignore.Parse(path, data, false)
}

// excludesFromConfig returns core.excludesFile from one git config file.
func excludesFromConfig(path, home string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	data, _ := io.ReadAll(io.LimitReader(f, maxGitConfig))
	section := ""
	found := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), maxGitConfig)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			end := strings.IndexByte(line, ']')
			if end < 0 {
				continue
			}
			section = strings.ToLower(strings.TrimSpace(line[1:end]))
			line = strings.TrimSpace(line[end+1:])
			if line == "" {
				continue
			}
		}
		if section != "core" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "excludesfile") {
			continue
		}
		v = strings.TrimSpace(v)
		if i := strings.IndexAny(v, "#;"); i >= 0 && !strings.HasPrefix(v, "\"") {
			v = strings.TrimSpace(v[:i])
		}
		v = strings.Trim(v, "\"")
		if strings.HasPrefix(v, "~/") && home != "" {
			v = filepath.Join(home, v[2:])
		}
		found = v
	}
	return found
}
