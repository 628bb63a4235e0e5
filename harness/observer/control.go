package observer

import (
	"encoding/json"
	"fmt"
	"time"

	"buzzbox/internal/workspace"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip44"
)

// Observer controls (spec §15): the owner sends a kind 24200 event p-tagging
// the agent whose content is NIP-44 v2 encrypted JSON
//
//	{"type":"cancel_turn","channelId":"<uuid>","requestId":"…"}
//	{"type":"switch_model","channelId":"<uuid>","modelId":"…","requestId":"…"}
//
// (requestId optional, echoed back). The harness acts on an event only when
// its signature and id verify, its author is the owner, it is not a
// telemetry frame and its created_at is within observerControlSkew of now;
// anything else is ignored without an answer, since answering would let
// anyone make the agent publish. Each accepted control is answered with a
// control_result frame whose status is:
//
//	cancel_turn   sent (the running turn is being cancelled, its batch
//	              discarded as for !cancel) or no_active_turn
//	switch_model  switched (idle channel, model in the cached catalog: the
//	              next session uses it), unsupported_model (not in the
//	              catalog; nothing changes), pending (idle, no catalog cached
//	              yet) or requeued (busy: the turn is cancelled and its batch
//	              re-run under the new model). pending and requeued are
//	              followed by a second result once the new session has set
//	              the model: switched, unsupported_model or failure.
//	any other     error, with an error message (also for undecryptable or
//	              malformed content, or a bad channelId or modelId)

// Control types and result statuses.
const (
	ControlCancelTurn  = "cancel_turn"
	ControlSwitchModel = "switch_model"

	StatusSent             = "sent"
	StatusNoActiveTurn     = "no_active_turn"
	StatusSwitched         = "switched"
	StatusUnsupportedModel = "unsupported_model"
	StatusPending          = "pending"
	StatusRequeued         = "requeued"
	StatusFailure          = "failure"
	StatusError            = "error"
)

// ReasonSwitchModel is the cancel reason of a busy switch_model; its batch
// is re-parked like an interrupt's (spec §7.5).
const ReasonSwitchModel = "switch-model"

// ControlRequest is the decrypted content of a control frame.
type ControlRequest struct {
	Type      string `json:"type"`
	ChannelID string `json:"channelId"`
	ModelID   string `json:"modelId,omitempty"`
	RequestID string `json:"requestId,omitempty"`
}

// ControlResult is a control_result payload.
type ControlResult struct {
	Type      string `json:"type"`
	Status    string `json:"status"`
	ChannelID string `json:"channelId,omitempty"`
	ModelID   string `json:"modelId,omitempty"`
	RequestID string `json:"requestId,omitempty"`
	Error     string `json:"error,omitempty"`
}

// MaxControlField bounds a control's modelId and requestId in bytes: a
// longer requestId is not echoed (it would only bloat the answer).
const MaxControlField = 256

// Control vets ev, an event of the control subscription, and decodes the
// control it carries. ok is false for an event to ignore without an
// answer (not a control from the owner, a bad id or signature, a
// created_at too far from now); err, with ok true, is a control to answer
// with StatusError.
func (p *Publisher) Control(ev *nostr.Event) (req ControlRequest, ok bool, err error) {
	log := p.log.With("event_id", ev.ID, "author", ev.PubKey)
	if ev.Kind != workspace.KindObserverFrame || ev.PubKey != p.owner || ev.Tags.FindWithValue("p", p.agent) == nil {
		log.Debug("observer frame ignored: not a control from the owner")
		return req, false, nil
	}
	if f := ev.Tags.Find(frameTag); f != nil && f[1] != frameControl {
		log.Debug("observer frame ignored: not a control frame", "frame", f[1])
		return req, false, nil
	}
	if !ev.CheckID() {
		log.Warn("observer control ignored: id does not match its content")
		return req, false, nil
	}
	if ok, _ := ev.CheckSignature(); !ok {
		log.Warn("observer control ignored: bad signature")
		return req, false, nil
	}
	if skew := time.Since(ev.CreatedAt.Time()); skew > observerControlSkew || skew < -observerControlSkew {
		log.Warn("observer control ignored: created_at too far from now", "skew", skew.Round(time.Second), "allowed", observerControlSkew)
		return req, false, nil
	}
	req, err = p.decodeControl(ev.Content)
	if err != nil {
		log.Warn("observer control refused", "err", err)
	}
	return req, true, err
}

func (p *Publisher) decodeControl(content string) (ControlRequest, error) {
	var req ControlRequest
	plain, err := nip44.Decrypt(content, p.convKey)
	if err != nil {
		return req, fmt.Errorf("decrypt control: %w", err)
	}
	if err := json.Unmarshal([]byte(plain), &req); err != nil {
		return ControlRequest{}, fmt.Errorf("decode control: %w", err)
	}
	if len(req.RequestID) > MaxControlField {
		req.RequestID = ""
	}
	return req, nil
}
