package relay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/workspace/nip98"
	"buzzbox/relay/web"

	"github.com/dgraph-io/badger/v4"
	"github.com/fiatjaf/eventstore"
	eventbadger "github.com/fiatjaf/eventstore/badger"
	"github.com/nbd-wtf/go-nostr"
)

// Config says how to build a Relay. The zero value of each field is
// documented; DataDir is the only required one.
type Config struct {
	// DataDir holds the event store (unless DB is set), the relay's own
	// signing key and the git repositories. Created if missing.
	DataDir string
	// DB is a postgres:// URL for eventstore's PostgreSQL backend. Empty
	// keeps events in a badger store under DataDir. Several instances on
	// one database are one relay (fanout.go, docs/scaling.md).
	DB string
	// KeyFile names the file holding the relay's signing key (64 hex
	// characters). It must exist. Empty keeps the key in DataDir, made on
	// first start; instances sharing a database need one shared file.
	KeyFile string
	// GitDir is the directory of the hosted git repositories. Empty is
	// DataDir/git, except with DB set: then git hosting is off, since
	// each instance would keep repositories of its own.
	GitDir string
	// Owner is the relay owner's pubkey (hex or npub). The owner is a
	// member and administers every channel. Empty means no owner.
	Owner string
	// Allow lists member pubkeys (hex or npub) besides the owner.
	Allow []string
	// AllowFile names a file of member pubkeys, one per line; blank lines
	// and lines starting with # are skipped. Empty means none.
	AllowFile string
	// Admins lists pubkeys (hex or npub) that, like the owner, may call
	// the NIP-86 management API and cannot be banned. Empty means only
	// the owner.
	Admins []string
	// Open lets anyone read and write without NIP-42 AUTH. Private
	// channels still need an authenticated member.
	Open bool
	// PublicURL is the ws:// or wss:// URL clients use, when the relay
	// sits behind a proxy or is reached by a name of its own; it fixes the
	// scheme and host that AUTH and NIP-98 events must name. Empty derives
	// them from the listen address (see listenNames), never from requests.
	PublicURL string
	// OtherURLs are further URLs clients reach the relay by (another name,
	// a second proxy), each with PublicURL's scheme. Nil means none; they
	// need PublicURL.
	OtherURLs []string
	// MaxEventBytes, MaxFilters, MaxSubscriptions, EventsPerSecond and
	// EventBurst override the limits of limits.go; zero keeps the default.
	MaxEventBytes    int
	MaxFilters       int
	MaxSubscriptions int
	EventsPerSecond  float64
	EventBurst       int
	// MaxFuture and MaxAge bound how far an event's created_at may lie
	// ahead of or behind the relay's clock; zero keeps the defaults of
	// limits.go (15 minutes, 3 years), a negative value lifts the bound.
	// Events the relay signs itself are not checked.
	MaxFuture time.Duration
	MaxAge    time.Duration
	// SyncWrites makes the badger store fsync every write, so acknowledged
	// events survive a power cut, not only a crash of the process. False
	// leaves flushing to the OS: a kill -9 loses nothing, a power cut may.
	SyncWrites bool
	// BlobDir is the directory of Blossom blobs (blossom.go). Empty is
	// DataDir/blobs; instances sharing a database should share one.
	BlobDir string
	// MaxBlobBytes bounds one uploaded blob; zero is DefaultMaxBlobBytes.
	MaxBlobBytes int64
	// Git is the git executable serving /git/; empty looks up "git" on
	// PATH when a request comes.
	Git string
	// WorkflowHTTPAllow lists the hosts (name or IP, optionally with
	// :port) a workflow's call_webhook step may call (workflowhttp.go).
	// Nil allows none.
	WorkflowHTTPAllow []string
	// Logger receives the relay's logs. Nil discards them.
	Logger *slog.Logger
	// Now is the clock for AUTH and NIP-98 windows and for MaxFuture and
	// MaxAge. Nil is time.Now.
	Now func() time.Time
}

// Relay is a running buzz relay: NIP-01 over websocket (ws.go) with the
// access rules, channels, HTTP bridge and git hosting. Build it with New
// (or Start).
type Relay struct {
	cfg     Config
	keys    parsedKeys // authors' keys, parsed once (verify.go)
	log     *slog.Logger
	store   eventstore.Store
	secret  string // the relay's signing key, hex
	pubkey  string
	mem     *membership
	inv     *invites
	owner   string // fixed after New; also in mem
	limiter *rateLimiter
	chans   *channels
	fan     *fanout // nil without DB
	expiry  *expiry // NIP-40 sweeper
	seen    *nip98.SeenCache
	web     *web.Handler  // the browser client at /
	logins  logins        // the owner's one-time sign-in links
	refs    refCache      // channels of events others refer to (refs.go)
	blobs   blobStore     // Blossom blobs (blossom.go)
	blobMu  sync.Mutex    // serialises blob metadata updates
	present presenceCache // each key's latest presence (presence.go)
	flows   *engine       // the workflow engine (workflows.go)
	search  searchBackend // full-text index (search.go)

	stateMu   sync.Mutex
	lastState nostr.Timestamp // created_at of the newest channel state signed

	storeClosed atomic.Bool

	mu     sync.Mutex
	url    string
	self   selfNames          // names AUTH and NIP-98 events must use; set by New or when serving
	conns  map[net.Conn]bool  // hijacked websocket sockets, closed on shutdown
	live   map[*conn]bool     // connected websockets, for revocations
	stop   context.CancelFunc // set by Start
	done   chan struct{}      // closed when Start's Serve returns
	closed bool
}

type internalKey struct{}

// internal marks ctx as the relay's own doing: hooks let it through.
func internal(ctx context.Context) context.Context {
	return context.WithValue(ctx, internalKey{}, true)
}

func isInternal(ctx context.Context) bool {
	return ctx.Value(internalKey{}) != nil
}

// New opens the store and builds the relay. Close releases it.
func New(cfg Config) (*Relay, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("buzz-relay: data dir not set")
	}
	fillDefaults(&cfg)
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("buzz-relay: create data dir: %w", err)
	}
	var err error
	r := &Relay{
		cfg:     cfg,
		log:     cfg.Logger,
		mem:     newMembership(),
		conns:   make(map[net.Conn]bool),
		live:    make(map[*conn]bool),
		limiter: newRateLimiter(cfg.EventsPerSecond, cfg.EventBurst),
		seen:    nip98.NewSeenCache(0, replayWindow),
		web:     web.New(),
	}
	if err := r.loadMembers(); err != nil {
		return nil, err
	}
	if r.blobs, err = openBlobs(cfg); err != nil {
		return nil, err
	}
	if len(cfg.OtherURLs) > 0 && cfg.PublicURL == "" {
		return nil, errors.New("buzz-relay: other public URLs need a primary one: set PublicURL (--public-url) first")
	}
	if cfg.PublicURL != "" {
		if r.self, err = publicNames(cfg.PublicURL, cfg.OtherURLs...); err != nil {
			return nil, err
		}
	}
	var secret string
	if cfg.KeyFile != "" {
		secret, err = readKey(cfg.KeyFile)
	} else {
		secret, err = loadKey(filepath.Join(cfg.DataDir, keyFile))
	}
	if err != nil {
		return nil, err
	}
	r.secret = secret
	r.pubkey, _ = nostr.GetPublicKey(secret)

	var store eventstore.Store
	var pgs *pgSearch
	if cfg.DB != "" {
		name := instanceName()
		pg, err := openPostgres(cfg.DB, name, r.pubkey)
		if err != nil {
			return nil, err
		}
		if r.fan, err = newFanout(r, pg, name); err != nil {
			pg.Close()
			return nil, err
		}
		store = pgStore{pg}
		if pgs, err = newPGSearch(pg.DB.DB); err != nil {
			r.fan.l.Close()
			pg.Close()
			return nil, err
		}
		if cfg.BlobDir == "" {
			r.log.Warn("uploaded files stay on this instance: with --db, give all instances one shared --blob-dir")
		}
		if cfg.GitDir == "" {
			r.log.Warn("git hosting is off: with --db every instance would keep repositories of its own; give all instances one shared --git-dir to serve /git/")
		}
	} else if store, err = openStore(cfg, r.log); err != nil {
		return nil, err
	}
	r.store = guard(store)
	r.chans = newChannels()
	r.flows = newEngine(r)
	fail := func(err error) (*Relay, error) {
		if r.fan != nil {
			r.fan.l.Close()
		}
		store.Close()
		return nil, err
	}
	if err := r.loadChannels(); err != nil {
		return fail(err)
	}
	// What the relay signs next is dated after the newest it signed
	// before (a repository's state, a channel's): a replaceable event
	// re-signed within the second of the one it replaces would otherwise
	// lose to it by id.
	if ev := r.firstStored(internal(context.Background()), nostr.Filter{Authors: []string{r.pubkey}, Limit: 1}); ev != nil {
		r.sawState(ev.CreatedAt)
	}
	if err := r.loadMemberRecords(); err != nil {
		return fail(err)
	}
	if err := r.loadInvites(); err != nil {
		return fail(err)
	}
	if err := r.openSearch(pgs); err != nil {
		return fail(err)
	}
	if r.fan != nil {
		r.fan.start()
	}
	r.expiry = startExpiry(r)
	if err := r.flows.start(); err != nil {
		r.expiry.close()
		return fail(err)
	}
	return r, nil
}

func fillDefaults(cfg *Config) {
	if cfg.MaxEventBytes == 0 {
		cfg.MaxEventBytes = defaultMaxEventBytes
	}
	if cfg.MaxFilters == 0 {
		cfg.MaxFilters = defaultMaxFilters
	}
	if cfg.MaxSubscriptions == 0 {
		cfg.MaxSubscriptions = defaultMaxSubscriptions
	}
	if cfg.EventsPerSecond == 0 {
		cfg.EventsPerSecond = defaultEventsPerSecond
	}
	if cfg.EventBurst == 0 {
		cfg.EventBurst = defaultEventBurst
	}
	if cfg.MaxFuture == 0 {
		cfg.MaxFuture = defaultMaxFuture
	}
	if cfg.MaxAge == 0 {
		cfg.MaxAge = defaultMaxAge
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
}

// parsePubkey accepts a public key as nostrkey reads one: 64 hex
// characters in either case or an npub, and returns it as lower-case hex.
func parsePubkey(s string) (string, error) {
	pk, err := nostrkey.ParsePublic(s)
	if err != nil {
		return "", err
	}
	return pk.Hex(), nil
}

func (r *Relay) loadMembers() error {
	if r.cfg.Owner != "" {
		pk, err := parsePubkey(r.cfg.Owner)
		if err != nil {
			return fmt.Errorf("buzz-relay: owner: %w", err)
		}
		r.owner = pk
		r.mem.owner = pk
	}
	for _, a := range r.cfg.Admins {
		pk, err := parsePubkey(a)
		if err != nil {
			return fmt.Errorf("buzz-relay: admin: %w", err)
		}
		r.mem.admins[pk] = true
	}
	for _, a := range r.cfg.Allow {
		pk, err := parsePubkey(a)
		if err != nil {
			return fmt.Errorf("buzz-relay: allow: %w", err)
		}
		r.mem.static[pk] = true
	}
	if r.cfg.AllowFile == "" {
		return nil
	}
	f, err := os.Open(r.cfg.AllowFile)
	if err != nil {
		return fmt.Errorf("buzz-relay: read allowlist: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxAllowlistBytes+1))
	if err != nil {
		return fmt.Errorf("buzz-relay: read allowlist %s: %w", r.cfg.AllowFile, err)
	}
	if len(b) > maxAllowlistBytes {
		return fmt.Errorf("buzz-relay: read allowlist %s: larger than %d bytes", r.cfg.AllowFile, maxAllowlistBytes)
	}
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		pk, err := parsePubkey(line)
		if err != nil {
			return fmt.Errorf("buzz-relay: allowlist %s line %d: %w", r.cfg.AllowFile, i+1, err)
		}
		r.mem.static[pk] = true
	}
	return nil
}

const keyFile = "relay.key"

// loadKey reads the relay's signing key, making one on first start.
func loadKey(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		k := strings.TrimSpace(string(b))
		if !nostr.IsValid32ByteHex(k) {
			return "", fmt.Errorf("buzz-relay: read key %s: not 64 hex characters", path)
		}
		return k, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("buzz-relay: read key: %w", err)
	}
	k := nostr.GeneratePrivateKey()
	if err := os.WriteFile(path, []byte(k+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("buzz-relay: write key: %w", err)
	}
	return k, nil
}

// readKey reads the relay's signing key from --relay-key-file, which must
// exist: instances sharing it must not each make one of their own.
func readKey(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("buzz-relay: --relay-key-file: %w; write 64 hex characters of a new secret key there first (e.g. openssl rand -hex 32 > %s; chmod 600 %s) and give every instance the same file", err, path, path)
	}
	k := strings.ToLower(strings.TrimSpace(string(b)))
	if !nostr.IsValid32ByteHex(k) {
		return "", fmt.Errorf("buzz-relay: --relay-key-file %s: not 64 hex characters", path)
	}
	if _, err := nostr.GetPublicKey(k); err != nil {
		return "", fmt.Errorf("buzz-relay: --relay-key-file %s: not a valid secret key: %w", path, err)
	}
	return k, nil
}

// badgerLog sends badger's messages to slog.
type badgerLog struct{ l *slog.Logger }

func (b badgerLog) Errorf(f string, a ...any)   { b.l.Error(strings.TrimSpace(fmt.Sprintf(f, a...))) }
func (b badgerLog) Warningf(f string, a ...any) { b.l.Warn(strings.TrimSpace(fmt.Sprintf(f, a...))) }
func (b badgerLog) Infof(f string, a ...any)    { b.l.Debug(strings.TrimSpace(fmt.Sprintf(f, a...))) }
func (b badgerLog) Debugf(string, ...any)       {}

func openStore(cfg Config, log *slog.Logger) (eventstore.Store, error) {
	dir := filepath.Join(cfg.DataDir, "events")
	s := &eventbadger.BadgerBackend{
		Path:     dir,
		MaxLimit: maxQueryLimit,
		BadgerOptionsModifier: func(o badger.Options) badger.Options {
			return o.WithLogger(badgerLog{log.With("component", "badger")}).WithSyncWrites(cfg.SyncWrites)
		},
	}
	if err := s.Init(); err != nil {
		return nil, fmt.Errorf("buzz-relay: open store %s: %w", dir, err)
	}
	return &badgerStore{s}, nil
}

// PublicKey returns the hex pubkey the relay signs channel state with.
func (r *Relay) PublicKey() string { return r.pubkey }

// URL returns ws://host:port of the listener Serve was given, or "" before.
func (r *Relay) URL() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.url
}

// HTTPURL returns URL with the http scheme: the base of the HTTP bridge and
// the git routes.
func (r *Relay) HTTPURL() string { return "http" + strings.TrimPrefix(r.URL(), "ws") }

// Serve answers websocket, NIP-11, HTTP bridge and git requests on ln
// until ctx ends, then stops accepting, gives requests in flight
// shutdownGrace to finish, closes every connection and websocket, and
// returns nil. It does not close the store; Close does.
func (r *Relay) Serve(ctx context.Context, ln net.Listener) error {
	if r.listening(ln.Addr()) {
		r.log.Warn("listening on every interface without --public-url: AUTH and NIP-98 tokens must name localhost or one of this host's addresses; set --public-url to the URL clients use for any other name",
			"names", strings.Join(r.names().hosts, " "))
	}
	srv := &http.Server{
		Handler:           r,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(r.log.Handler(), slog.LevelDebug),
	}
	served, stopped := make(chan struct{}), make(chan struct{})
	// Stops when ctx ends or Serve returns on its own; Serve returns after it.
	go func() {
		defer close(stopped)
		select {
		case <-ctx.Done():
		case <-served:
			return
		}
		sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		srv.Shutdown(sctx)
		// What the grace left running (a request whose client stopped
		// sending, a connection that never sent one) is cut now, so that
		// no request outlives Serve.
		srv.Close()
		r.closeConns()
	}()
	r.log.Info("listening", "url", r.URL(), "pubkey", r.pubkey, "open", r.cfg.Open)
	actx, stopAnnouncing := context.WithCancel(ctx)
	announced := make(chan struct{})
	// Ends when the web client's assets are compressed and every
	// repository has been looked at, or Serve returns.
	go func() {
		defer close(announced)
		r.web.Prepare()
		r.announceRepos(actx)
	}()
	err := srv.Serve(ln)
	close(served)
	stopAnnouncing()
	<-stopped
	<-announced
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return fmt.Errorf("buzz-relay: serve %s: %w", ln.Addr(), err)
}

// Start builds a relay from cfg, listens on addr (use "127.0.0.1:0" in
// tests) and serves in the background until Close.
func Start(cfg Config, addr string) (*Relay, error) {
	r, err := New(cfg)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		r.store.Close()
		return nil, fmt.Errorf("buzz-relay: listen %s: %w", addr, err)
	}
	r.startOn(ln)
	return r, nil
}

// StartListener is Start on a listener the caller made, e.g. to name the
// relay's own address in cfg.PublicURL before it is built. The relay owns
// ln from then on, also when New fails.
func StartListener(cfg Config, ln net.Listener) (*Relay, error) {
	r, err := New(cfg)
	if err != nil {
		ln.Close()
		return nil, err
	}
	r.startOn(ln)
	return r, nil
}

// startOn serves ln in the background until Close.
func (r *Relay) startOn(ln net.Listener) {
	ctx, cancel := context.WithCancel(context.Background())
	r.stop = cancel
	r.done = make(chan struct{})
	r.listening(ln.Addr())
	// Stops when Close cancels ctx.
	go func() {
		defer close(r.done)
		if err := r.Serve(ctx, ln); err != nil {
			r.log.Error("serve", "err", err)
		}
	}()
}

// listening records the listen address: URL's value and, without
// --public-url, the relay's names. It reports whether the address is a
// wildcard that leaves the names to guess.
func (r *Relay) listening(addr net.Addr) (wildcard bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.url = "ws://" + addr.String()
	if r.cfg.PublicURL == "" {
		r.self, wildcard = listenNames(addr)
	}
	return wildcard
}

// names returns what AUTH and NIP-98 events must call the relay.
func (r *Relay) names() selfNames {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.self
}

// Close stops a relay made by Start and closes the store. For a relay
// served with Serve, end Serve's context first.
func (r *Relay) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.mu.Unlock()
	if r.stop != nil {
		r.stop()
		<-r.done
	}
	r.closeConns()
	r.expiry.close()
	r.flows.close()
	if r.fan != nil {
		r.fan.close()
	}
	r.storeClosed.Store(true)
	if r.search != nil {
		if err := r.search.close(); err != nil {
			r.log.Warn("close search index", "err", err)
		}
	}
	r.store.Close()
	return nil
}

func (r *Relay) track(c net.Conn, open bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if open {
		r.conns[c] = true
	} else {
		delete(r.conns, c)
	}
}

func (r *Relay) closeConns() {
	r.mu.Lock()
	cs := make([]net.Conn, 0, len(r.conns))
	for c := range r.conns {
		cs = append(cs, c)
	}
	r.mu.Unlock()
	for _, c := range cs {
		c.Close()
	}
}

// ServeHTTP routes one request: websocket upgrades and NIP-11 to the
// relay, NIP-86 management calls and /invite to membership, /query /count
// /events to the bridge, /git/ to git, Blossom's paths to blossom.go, / and /static/ to the web client.
func (r *Relay) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	switch {
	case strings.EqualFold(req.Header.Get("Upgrade"), "websocket"):
		r.serveWebsocket(w, req)
	case isManagementCall(req):
		r.serveManagement(w, req)
	case req.URL.Path == invitePath:
		r.serveInvite(w, req)
	case strings.Contains(req.Header.Get("Accept"), "application/nostr+json"):
		r.serveInfo(w, req)
	case strings.HasPrefix(req.URL.Path, "/git/"):
		r.serveGit(w, req)
	case req.URL.Path == "/query" || req.URL.Path == "/count" || req.URL.Path == "/events":
		r.serveBridge(w, req)
	case strings.HasPrefix(req.URL.Path, hooksPrefix):
		r.serveHook(w, req)
	case isBlobPath(req.URL.Path):
		r.serveBlossom(w, req)
	case req.URL.Path == loginPath:
		r.serveLogin(w, req)
	case req.URL.Path == loginLinkPath:
		r.serveLoginLink(w, req)
	case web.Serves(req.URL.Path):
		r.web.ServeHTTP(w, req)
	default:
		http.NotFound(w, req)
	}
}

// scheme returns "ws" or "wss" as clients should name this relay.
func (r *Relay) scheme(req *http.Request) string {
	if r.names().secure || req.TLS != nil {
		return "wss"
	}
	return "ws"
}

// httpBase returns the relay's http(s) URL for links it hands out: the
// one of its own names the request came by, else the primary one.
func (r *Relay) httpBase(req *http.Request) string {
	names := r.names()
	bases := names.bases(r.httpScheme(req))
	if len(bases) == 0 {
		return r.HTTPURL()
	}
	came := normHost(req.Host)
	for i, h := range names.hosts {
		if h == came {
			return bases[i]
		}
	}
	return bases[0]
}
