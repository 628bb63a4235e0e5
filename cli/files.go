package cli

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/internal/workspace"
	"buzzbox/internal/workspace/nip98"
	"buzzbox/internal/workspace/relayclient"
)

// Files go to the relay's Blossom routes (relay/blossom.go): PUT /upload
// with a kind 24242 authorization naming the file's hash and, for a
// message's file, its channel; the message carries a NIP-92 imeta tag.

// blobAuthTTL is how long an upload or get authorization holds: long
// enough for a 50 MB upload on a slow link, short enough that a leaked
// one is soon worthless.
const blobAuthTTL = 10 * time.Minute

// blobDescriptor is the relay's answer to an upload (BUD-02, with dim and
// thumb for images).
type blobDescriptor struct {
	URL      string `json:"url"`
	SHA256   string `json:"sha256"`
	Size     int64  `json:"size"`
	Type     string `json:"type"`
	Uploaded int64  `json:"uploaded"`
	Dim      string `json:"dim,omitempty"`
	Thumb    string `json:"thumb,omitempty"`
}

// isBlobHash reports whether s is a sha256 in lowercase hex.
func isBlobHash(s string) bool {
	b, err := hex.DecodeString(s)
	return err == nil && len(b) == sha256.Size && strings.ToLower(s) == s
}

func (in *inv) localPath(p string) string {
	if !filepath.IsAbs(p) && in.env.Dir != "" {
		return filepath.Join(in.env.Dir, p)
	}
	return p
}

// blobAuth signs a kind 24242 authorization for verb and hash, with extra
// tags, as an Authorization header value.
func (in *inv) blobAuth(verb, content, hash string, extra ...nostr.Tag) (string, error) {
	ev := &nostr.Event{Kind: workspace.KindMediaAuth, Content: content, Tags: nostr.Tags{
		{"t", verb}, {"x", hash}, {"expiration", strconv.FormatInt(time.Now().Add(blobAuthTTL).Unix(), 10)}}}
	ev.Tags = append(ev.Tags, extra...)
	if err := in.sign(ev); err != nil {
		return "", err
	}
	raw, _ := json.Marshal(ev)
	return nip98.Scheme + " " + base64.StdEncoding.EncodeToString(raw), nil
}

// blobFailure turns a refused blob request into the CLI's error.
func blobFailure(what string, resp *http.Response) error {
	var body struct {
		Message string `json:"message"`
	}
	json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&body)
	msg := body.Message
	if msg == "" {
		msg = resp.Header.Get("X-Reason")
	}
	if msg == "" {
		msg = resp.Status
	}
	e := relayclient.Refusal(resp.StatusCode, msg)
	e.Message = what + ": " + e.Message
	return e
}

// uploadFile streams the file at path to the relay for channel ch ("" for
// the whole relay) and returns its descriptor.
func uploadFile(in *inv, path, ch string) (blobDescriptor, error) {
	f, err := os.Open(in.localPath(path))
	if err != nil {
		return blobDescriptor{}, userErr("cannot read %s: %v", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return blobDescriptor{}, userErr("--file %s: not a regular file", path)
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return blobDescriptor{}, userErr("cannot read %s: %v", path, err)
	}
	hash := hex.EncodeToString(h.Sum(nil))
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return blobDescriptor{}, userErr("cannot read %s: %v", path, err)
	}
	var extra []nostr.Tag
	if ch != "" {
		extra = append(extra, nostr.Tag{"h", ch})
	}
	auth, err := in.blobAuth("upload", "Upload "+filepath.Base(path), hash, extra...)
	if err != nil {
		return blobDescriptor{}, err
	}
	req, err := http.NewRequestWithContext(in.ctx, http.MethodPut, in.c.Base()+"/upload", f)
	if err != nil {
		return blobDescriptor{}, otherErr("upload %s: %v", path, err)
	}
	req.ContentLength = st.Size()
	req.Header.Set("Authorization", auth)
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := in.c.HTTPClient().Do(req)
	if err != nil {
		return blobDescriptor{}, &Error{Category: catNetwork, Message: fmt.Sprintf("upload %s: %v", path, err), Retryable: true}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return blobDescriptor{}, blobFailure("upload "+path, resp)
	}
	var d blobDescriptor
	if err := json.NewDecoder(resp.Body).Decode(&d); err != nil || d.SHA256 != hash {
		return blobDescriptor{}, otherErr("upload %s: the relay's descriptor does not name the file (%v)", path, err)
	}
	return d, nil
}

// imetaTag is the NIP-92 tag describing an uploaded file.
func imetaTag(d blobDescriptor, name string) nostr.Tag {
	t := nostr.Tag{"imeta", "url " + d.URL, "m " + d.Type, "x " + d.SHA256, "size " + strconv.FormatInt(d.Size, 10)}
	if d.Dim != "" {
		t = append(t, "dim "+d.Dim)
	}
	if d.Thumb != "" {
		t = append(t, "thumb "+d.Thumb)
	}
	if name != "" {
		t = append(t, "alt "+name)
	}
	return t
}

// attachFiles uploads each --file for channel ch and returns the imeta
// tags and the URLs to append to the message text (NIP-92 wants each in
// the content).
func attachFiles(in *inv, ch string, paths []string) (nostr.Tags, []string, error) {
	var tags nostr.Tags
	var urls []string
	for _, p := range paths {
		d, err := uploadFile(in, p, ch)
		if err != nil {
			return nil, nil, err
		}
		tags = append(tags, imetaTag(d, filepath.Base(p)))
		urls = append(urls, d.URL)
	}
	return tags, urls, nil
}

func runFilesGet(in *inv) error {
	if len(in.p.args) != 1 {
		return userErr("buzz files get needs one HASH (the file's sha256, or its URL)")
	}
	arg := in.p.args[0]
	hash := strings.ToLower(arg[strings.LastIndex(arg, "/")+1:])
	hash, _, _ = strings.Cut(hash, ".")
	if !isBlobHash(hash) {
		return userErr("%q is not a sha256 (64 hex characters) or a file URL", arg)
	}
	auth, err := in.blobAuth("get", "Get "+hash, hash)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(in.ctx, http.MethodGet, in.c.Base()+"/"+hash, nil)
	if err != nil {
		return otherErr("get %s: %v", hash, err)
	}
	req.Header.Set("Authorization", auth)
	resp, err := in.c.HTTPClient().Do(req)
	if err != nil {
		return &Error{Category: catNetwork, Message: fmt.Sprintf("get %s: %v", hash, err), Retryable: true}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return blobFailure("get "+hash, resp)
	}
	out := in.out
	var f *os.File
	if o := in.p.str("output"); o != "" && o != "-" {
		f, err = os.CreateTemp(filepath.Dir(in.localPath(o)), ".buzz-get-*")
		if err != nil {
			return userErr("cannot write %s: %v", o, err)
		}
		defer os.Remove(f.Name())
		defer f.Close()
		out = f
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(out, h), resp.Body)
	if err != nil {
		return &Error{Category: catNetwork, Message: fmt.Sprintf("get %s: %v", hash, err), Retryable: true}
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != hash {
		return otherErr("get %s: the relay sent bytes hashing to %s", hash, got)
	}
	if f != nil {
		if err := f.Close(); err != nil {
			return userErr("cannot write %s: %v", in.p.str("output"), err)
		}
		if err := os.Rename(f.Name(), in.localPath(in.p.str("output"))); err != nil {
			return userErr("cannot write %s: %v", in.p.str("output"), err)
		}
		return writeJSON(in.out, map[string]any{"sha256": hash, "size": n, "type": resp.Header.Get("Content-Type"), "path": in.p.str("output")})
	}
	return nil
}
