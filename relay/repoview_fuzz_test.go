package relay

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzViewPath: a path the view takes has no element that leaves the
// tree or is empty, no control character, and is taken as it was given.
func FuzzViewPath(f *testing.F) {
	for _, s := range []string{"", "a", "src/main.go", "../x", "a/../b", "/etc/passwd", "a//b", ".", "a/.", "a\nb", "é/ü", "-n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		got, err := cleanViewPath(p)
		if err != nil {
			return
		}
		if got != p {
			t.Fatalf("cleanViewPath(%q) = %q; want it unchanged", p, got)
		}
		if p == "" {
			return
		}
		for _, el := range strings.Split(p, "/") {
			if el == "" || el == "." || el == ".." {
				t.Fatalf("cleanViewPath(%q) took element %q", p, el)
			}
		}
		if strings.ContainsAny(p, "\x00\n\r\t") {
			t.Fatalf("cleanViewPath(%q) took a control character", p)
		}
	})
}

// signedSample is a commit object with a NIP-GS signature header.
const signedSample = "tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n" +
	"author T <t@x> 1700000000 +0000\ncommitter T <t@x> 1700000000 +0000\n" +
	"gpgsig -----BEGIN SIGNED MESSAGE-----\n eyJ2IjoxfQ==\n -----END SIGNED MESSAGE-----\n\nmsg\n\nbody gpgsig not a header\n"

func TestSplitSignedCommit(t *testing.T) {
	payload, sig, signed := splitSignedCommit([]byte(signedSample))
	wantPayload := "tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nauthor T <t@x> 1700000000 +0000\ncommitter T <t@x> 1700000000 +0000\n\nmsg\n\nbody gpgsig not a header\n"
	wantSig := "-----BEGIN SIGNED MESSAGE-----\neyJ2IjoxfQ==\n-----END SIGNED MESSAGE-----\n"
	if !signed || string(payload) != wantPayload || string(sig) != wantSig {
		t.Errorf("splitSignedCommit = %q, %q, %v; want %q, %q, true", payload, sig, signed, wantPayload, wantSig)
	}
	// A gpgsig line in the message is not a signature.
	if _, _, signed := splitSignedCommit([]byte("tree x\n\ngpgsig -----BEGIN SIGNED MESSAGE-----\n")); signed {
		t.Error("a gpgsig line in the message counted as a signature")
	}
	if c := checkCommitSignature([]byte(signedSample)); c.Status != sigInvalid {
		t.Errorf("a malformed envelope = %+v; want invalid", c)
	}
	pgp := strings.Replace(signedSample, "SIGNED MESSAGE", "PGP SIGNATURE", 2)
	if c := checkCommitSignature([]byte(pgp)); c.Status != sigUnknown {
		t.Errorf("an OpenPGP signature = %+v; want unknown", c)
	}
}

// FuzzSplitSignedCommit: without a signature the payload is the object
// itself; with one, the payload and the signature's lines together are
// the object less the header's name and continuation spaces; and parsing
// a commit never panics.
func FuzzSplitSignedCommit(f *testing.F) {
	f.Add([]byte(signedSample))
	f.Add([]byte("tree x\nparent y\nauthor A <a> 1 +0000\n\nm"))
	f.Add([]byte("gpgsig x"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, obj []byte) {
		payload, sig, signed := splitSignedCommit(obj)
		if !signed {
			if !bytes.Equal(payload, obj) || len(sig) != 0 {
				t.Fatalf("unsigned %q split into %q and %q", obj, payload, sig)
			}
		} else if len(payload) > len(obj) || len(sig) > len(obj)+bytes.Count(obj, []byte("\n"))+1 {
			t.Fatalf("signed %q split into more than it holds: %q, %q", obj, payload, sig)
		}
		parseCommit("0", obj)
		parsePerson(string(obj))
	})
}
