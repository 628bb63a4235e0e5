package relay

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"buzzbox/internal/proc"
	"buzzbox/internal/usage"
)

// Exit codes of buzz-relay.
const (
	exitOK    = 0
	exitError = 2 // usage or operational error
)

// listFlag collects a repeatable flag; each use may hold comma-separated values.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

// Main runs the buzz-relay identity: parses flags, opens the store, serves
// until SIGINT or SIGTERM and returns the exit code.
func Main(ctx context.Context, args []string, env proc.Env) int {
	fs := flag.NewFlagSet("buzz-relay", flag.ContinueOnError)
	var (
		cfg      Config
		allow    listFlag
		hooksOut listFlag
		public   listFlag
		admins   listFlag
		listen   = fs.String("listen", "127.0.0.1:3000", "`address` to listen on")
		logLevel = fs.String("log-level", "info", "log `level`: debug, info, warn or error")
		logJSON  = fs.Bool("log-json", false, "log JSON lines instead of text")
	)
	fs.StringVar(&cfg.DataDir, "data", "./buzz-relay-data", "`dir` for the event store, the relay key and git repositories")
	fs.StringVar(&cfg.DB, "db", "", "postgres://… `url`: keep events in PostgreSQL instead of the embedded store")
	fs.StringVar(&cfg.KeyFile, "relay-key-file", "", "`file` holding the relay's signing key (64 hex characters); must exist; instances sharing one --db need the same file (default: made in the data dir)")
	fs.StringVar(&cfg.GitDir, "git-dir", "", "`dir` of hosted git repositories (default: the data dir's git/; with --db, git hosting needs it, on storage every instance shares)")
	fs.StringVar(&cfg.BlobDir, "blob-dir", "", "`dir` of uploaded files (Blossom blobs); instances sharing one --db should share one (default: the data dir's blobs/)")
	fs.Int64Var(&cfg.MaxBlobBytes, "max-blob-bytes", DefaultMaxBlobBytes, "largest accepted upload, in `bytes`")
	fs.BoolVar(&cfg.SyncWrites, "sync", false, "fsync every write to the embedded store (survives power loss, slower)")
	fs.StringVar(&cfg.Owner, "owner", "", "owner `pubkey` (hex or npub): a member who administers every channel")
	fs.Var(&allow, "allow", "member `pubkey` (hex or npub); repeat or separate with commas")
	fs.Var(&admins, "admin", "admin `pubkey` (hex or npub): may manage members over NIP-86, cannot be banned; repeatable")
	fs.Var(&hooksOut, "workflow-http-allow", "`host` (name or IP, optionally :port) a workflow's call_webhook step may call; repeat or separate with commas; loopback, link-local and private addresses only when that exact address is listed")
	fs.StringVar(&cfg.AllowFile, "allow-file", "", "`file` of member pubkeys, one per line, # comments")
	fs.BoolVar(&cfg.Open, "open", false, "serve anyone without NIP-42 AUTH (private channels still need it)")
	fs.Var(&public, "public-url", "ws:// or wss:// `url` clients use (behind a proxy, or any name besides the listen address); AUTH and NIP-98 tokens must name it; repeat or separate with commas for more names, the first is the primary")
	fs.IntVar(&cfg.MaxEventBytes, "max-event-bytes", defaultMaxEventBytes, "largest accepted event, in `bytes`")
	fs.IntVar(&cfg.MaxFilters, "max-filters", defaultMaxFilters, "most filters in one REQ or /query")
	fs.IntVar(&cfg.MaxSubscriptions, "max-subscriptions", defaultMaxSubscriptions, "most live subscriptions per connection")
	fs.Float64Var(&cfg.EventsPerSecond, "rate", defaultEventsPerSecond, "sustained events per second per pubkey")
	fs.IntVar(&cfg.EventBurst, "burst", defaultEventBurst, "burst of events per pubkey above the rate")
	fs.DurationVar(&cfg.MaxFuture, "max-future", defaultMaxFuture, "refuse events dated more than this `duration` ahead of the relay's clock (negative: no bound)")
	fs.DurationVar(&cfg.MaxAge, "max-age", defaultMaxAge, "refuse events dated more than this `duration` in the past (negative: no bound)")
	page := &usage.Page{Name: "buzz-relay", Flags: fs,
		About: "Nostr relay for a buzz workspace: persistent, NIP-42 authenticated, with\n" +
			"channels, NIP-86 membership, an HTTP bridge (/query, /events), git hosting\n" +
			"(/git/), Blossom file uploads (/upload, /<sha256>) and the web client at /. Every setting is a flag; it reads no\n" +
			"environment variables. At least one of --owner, --allow, --allow-file or\n" +
			"--open is required, so that someone can use it.",
		Examples: []string{
			"buzz-relay --owner npub1… --listen 127.0.0.1:3000 --data ./buzz-relay-data",
			"buzz-relay --open --listen 127.0.0.1:3000   # a local sandbox anyone may use",
			"buzz-relay --owner npub1… --listen 0.0.0.0:3000 --public-url wss://relay.example.com",
		}}
	if code, done := page.Parse(args, true, env.Out(), env.Err()); done {
		return code
	}
	cfg.Allow = allow
	cfg.WorkflowHTTPAllow = hooksOut
	if len(public) > 0 {
		cfg.PublicURL, cfg.OtherURLs = public[0], public[1:]
	}
	cfg.Admins = admins

	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(env.Err(), "buzz-relay: --log-level %q: want debug, info, warn or error\n", *logLevel)
		return exitError
	}
	opts := &slog.HandlerOptions{Level: level}
	if *logJSON {
		cfg.Logger = slog.New(slog.NewJSONHandler(env.Err(), opts))
	} else {
		cfg.Logger = slog.New(slog.NewTextHandler(env.Err(), opts))
	}
	if cfg.Owner == "" && len(cfg.Admins) == 0 && len(cfg.Allow) == 0 && cfg.AllowFile == "" && !cfg.Open {
		fmt.Fprintln(env.Err(), "buzz-relay: no member could use this relay: no --owner, --allow or --allow-file, and not --open")
		fmt.Fprintln(env.Err(), "hint: buzz-relay --owner <your npub>   (or --open for a local sandbox)")
		return exitError
	}
	if !filepath.IsAbs(cfg.DataDir) && env.Dir != "" {
		cfg.DataDir = filepath.Join(env.Dir, cfg.DataDir)
	}
	for _, p := range []*string{&cfg.AllowFile, &cfg.KeyFile, &cfg.GitDir, &cfg.BlobDir} {
		if *p != "" && !filepath.IsAbs(*p) && env.Dir != "" {
			*p = filepath.Join(env.Dir, *p)
		}
	}

	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	r, err := New(cfg)
	if err != nil {
		fmt.Fprintln(env.Err(), err)
		return exitError
	}
	defer r.Close()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(env.Err(), "buzz-relay: listen %s: %v\n", *listen, err)
		return exitError
	}
	if err := r.Serve(ctx, ln); err != nil {
		fmt.Fprintln(env.Err(), err)
		return exitError
	}
	cfg.Logger.Info("stopped")
	return exitOK
}
