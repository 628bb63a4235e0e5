package harness

import (
	"buzzbox/internal/workspace"
	"context"
	"encoding/json"
	"fmt"
	"time"

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
	controlCancelTurn  = "cancel_turn"
	controlSwitchModel = "switch_model"

	statusSent             = "sent"
	statusNoActiveTurn     = "no_active_turn"
	statusSwitched         = "switched"
	statusUnsupportedModel = "unsupported_model"
	statusPending          = "pending"
	statusRequeued         = "requeued"
	statusFailure          = "failure"
	statusError            = "error"
)

// reasonSwitchModel is the cancel reason of a busy switch_model; its batch
// is re-parked like an interrupt's (spec §7.5).
const reasonSwitchModel = "switch-model"

// controlRequest is the decrypted content of a control frame.
type controlRequest struct {
	Type      string `json:"type"`
	ChannelID string `json:"channelId"`
	ModelID   string `json:"modelId,omitempty"`
	RequestID string `json:"requestId,omitempty"`
}

// controlResult is a control_result payload.
type controlResult struct {
	Type      string `json:"type"`
	Status    string `json:"status"`
	ChannelID string `json:"channelId,omitempty"`
	ModelID   string `json:"modelId,omitempty"`
	RequestID string `json:"requestId,omitempty"`
	Error     string `json:"error,omitempty"`
}

func (h *harness) answerControl(req controlRequest, status, errMsg string) {
	h.obs.emit(frameControlResult, obsScope{slot: -1, channel: req.ChannelID}, controlResult{Type: req.Type, Status: status,
		ChannelID: req.ChannelID, ModelID: req.ModelID, RequestID: req.RequestID, Error: errMsg})
}

// observerControl vets one event of the control subscription and hands an
// accepted control to the loop. It runs on the intake goroutine.
func (h *harness) observerControl(ctx context.Context, ev *nostr.Event) {
	log := h.log.With("event_id", ev.ID, "author", ev.PubKey)
	if h.obsPub == nil {
		return
	}
	if ev.Kind != workspace.KindObserverFrame || ev.PubKey != h.cfg.Owner || ev.Tags.FindWithValue("p", h.cfg.AgentHex) == nil {
		log.Debug("observer frame ignored: not a control from the owner")
		return
	}
	if f := ev.Tags.Find(observerFrameTag); f != nil && f[1] != observerControl {
		log.Debug("observer frame ignored: not a control frame", "frame", f[1])
		return
	}
	if !ev.CheckID() {
		log.Warn("observer control ignored: id does not match its content")
		return
	}
	if ok, _ := ev.CheckSignature(); !ok {
		log.Warn("observer control ignored: bad signature")
		return
	}
	if skew := time.Since(ev.CreatedAt.Time()); skew > observerControlSkew || skew < -observerControlSkew {
		log.Warn("observer control ignored: created_at too far from now", "skew", skew.Round(time.Second), "allowed", observerControlSkew)
		return
	}
	req, err := h.decodeControl(ev.Content)
	if err != nil {
		log.Warn("observer control refused", "err", err)
		h.answerControl(req, statusError, err.Error())
		return
	}
	log.Info("observer control", "type", req.Type, "channel", req.ChannelID, "model", req.ModelID)
	h.do(func() { h.applyControl(ctx, req) })
}

func (h *harness) decodeControl(content string) (controlRequest, error) {
	var req controlRequest
	plain, err := nip44.Decrypt(content, h.obsPub.convKey)
	if err != nil {
		return req, fmt.Errorf("decrypt control: %w", err)
	}
	if err := json.Unmarshal([]byte(plain), &req); err != nil {
		return controlRequest{}, fmt.Errorf("decode control: %w", err)
	}
	if len(req.RequestID) > maxModelBytes {
		req.RequestID = "" // not echoed: it would only bloat the answer
	}
	return req, nil
}

// applyControl runs an accepted control on the loop goroutine.
func (h *harness) applyControl(ctx context.Context, req controlRequest) {
	switch req.Type {
	case controlCancelTurn, controlSwitchModel:
	default:
		h.answerControl(req, statusError, fmt.Sprintf("unknown control type %q", req.Type))
		return
	}
	if !isUUID(req.ChannelID) {
		h.answerControl(req, statusError, fmt.Sprintf("channelId %q is not a channel UUID", req.ChannelID))
		return
	}
	cs := h.queues[req.ChannelID]
	busy := cs != nil && cs.turn != nil
	if req.Type == controlCancelTurn {
		if !busy {
			h.answerControl(req, statusNoActiveTurn, "")
			return
		}
		cs.turn.cancel("cancel")
		h.answerControl(req, statusSent, "")
		return
	}
	if req.ModelID == "" || len(req.ModelID) > maxModelBytes {
		h.answerControl(req, statusError, fmt.Sprintf("modelId must be 1 to %d bytes", maxModelBytes))
		return
	}
	if busy {
		h.switchModel(req)
		h.switchAcks[req.ChannelID] = req
		cs.turn.cancel(reasonSwitchModel)
		h.answerControl(req, statusRequeued, "")
		return
	}
	known, offered := h.catalogOffers(req.ChannelID, req.ModelID)
	switch {
	case known && !offered:
		h.answerControl(req, statusUnsupportedModel, "")
	case known:
		h.switchModel(req)
		h.answerControl(req, statusSwitched, "")
	default:
		h.switchModel(req)
		h.switchAcks[req.ChannelID] = req
		h.answerControl(req, statusPending, "")
	}
}

// switchModel makes req's model the channel's and invalidates its
// sessions, so the next turn opens one with the model set (spec §9.5).
// Sessions of busy slots go when their turn ends (as for !rotate).
func (h *harness) switchModel(req controlRequest) {
	h.models[req.ChannelID] = req.ModelID
	h.gens[req.ChannelID]++
	h.store.forgetSession(req.ChannelID)
	for _, s := range h.slots {
		if !s.busy {
			h.dropSession(s, req.ChannelID)
		}
	}
}

// catalogOffers looks model up in the model catalog cached from an agent's
// first session/new, preferring the agent that holds the channel's
// session. known is false when no live agent has a catalog yet.
func (h *harness) catalogOffers(channel, model string) (known, offered bool) {
	var cat *modelCatalog
	for _, s := range h.slots {
		if s.agent == nil || !s.agent.alive() {
			continue
		}
		c := s.agent.modelCatalog()
		if c == nil {
			continue
		}
		if cat == nil || s.sessions[channel] != nil {
			cat = c
		}
	}
	if cat == nil {
		return false, false
	}
	return true, cat.offers(model)
}

// modelCatalog is the models an agent offered in its first session/new:
// configOptions values of category "model" and models.availableModels ids.
type modelCatalog struct {
	ids map[string]bool
}

func (c *modelCatalog) offers(model string) bool { return c.ids[model] }

func (a *agentProc) modelCatalog() *modelCatalog {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.catalog
}

// noteCatalog caches c unless a catalog is cached already.
func (a *agentProc) noteCatalog(c *modelCatalog) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.catalog == nil {
		a.catalog = c
	}
}
