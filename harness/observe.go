package harness

import (
	"context"
	"fmt"

	"buzzbox/harness/acpclient"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/harness/observer"
	"buzzbox/internal/workspace"
)

// The owner's observer controls (spec §15; the wire and its vetting are
// harness/observer's): cancel_turn and switch_model act on the channel
// queues here, on the loop goroutine.

// answerControl records a control_result frame for req.
func (h *harness) answerControl(req observer.ControlRequest, status, errMsg string) {
	h.obs.Emit(observer.FrameControlResult, observer.Scope{Slot: -1, Channel: req.ChannelID}, observer.ControlResult{Type: req.Type, Status: status,
		ChannelID: req.ChannelID, ModelID: req.ModelID, RequestID: req.RequestID, Error: errMsg})
}

// observerControl vets one event of the control subscription and hands an
// accepted control to the loop. It runs on the intake goroutine.
func (h *harness) observerControl(ctx context.Context, ev *nostr.Event) {
	if h.obsPub == nil {
		return
	}
	req, ok, err := h.obsPub.Control(ev)
	switch {
	case !ok:
		return
	case err != nil:
		h.answerControl(req, observer.StatusError, err.Error())
		return
	}
	h.log.Info("observer control", "event_id", ev.ID, "type", req.Type, "channel", req.ChannelID, "model", req.ModelID)
	h.do(func() { h.applyControl(ctx, req) })
}

// applyControl runs an accepted control on the loop goroutine.
func (h *harness) applyControl(ctx context.Context, req observer.ControlRequest) {
	switch req.Type {
	case observer.ControlCancelTurn, observer.ControlSwitchModel:
	default:
		h.answerControl(req, observer.StatusError, fmt.Sprintf("unknown control type %q", req.Type))
		return
	}
	if !workspace.IsUUID(req.ChannelID) {
		h.answerControl(req, observer.StatusError, fmt.Sprintf("channelId %q is not a channel UUID", req.ChannelID))
		return
	}
	cs := h.queues[req.ChannelID]
	busy := cs != nil && cs.turn != nil
	if req.Type == observer.ControlCancelTurn {
		if !busy {
			h.answerControl(req, observer.StatusNoActiveTurn, "")
			return
		}
		cs.turn.stoppedBy = h.cfg.Owner
		cs.turn.cancel("cancel")
		h.answerControl(req, observer.StatusSent, "")
		return
	}
	if req.ModelID == "" || len(req.ModelID) > observer.MaxControlField {
		h.answerControl(req, observer.StatusError, fmt.Sprintf("modelId must be 1 to %d bytes", observer.MaxControlField))
		return
	}
	if busy {
		h.switchModel(req)
		h.switchAcks[req.ChannelID] = req
		cs.turn.cancel(observer.ReasonSwitchModel)
		h.answerControl(req, observer.StatusRequeued, "")
		return
	}
	known, offered := h.catalogOffers(req.ChannelID, req.ModelID)
	switch {
	case known && !offered:
		h.answerControl(req, observer.StatusUnsupportedModel, "")
	case known:
		h.switchModel(req)
		h.answerControl(req, observer.StatusSwitched, "")
	default:
		h.switchModel(req)
		h.switchAcks[req.ChannelID] = req
		h.answerControl(req, observer.StatusPending, "")
	}
}

// switchModel makes req's model the channel's and invalidates its
// sessions, so the next turn opens one with the model set (spec §9.5).
// Sessions of busy slots go when their turn ends (as for !rotate).
func (h *harness) switchModel(req observer.ControlRequest) {
	h.models[req.ChannelID] = req.ModelID
	h.renewSessions(req.ChannelID)
}

// catalogOffers looks model up in the model catalog cached from an agent's
// first session/new, preferring the agent that holds the channel's
// session. known is false when no live agent has a catalog yet.
func (h *harness) catalogOffers(channel, model string) (known, offered bool) {
	var cat acpclient.Catalog
	for _, s := range h.slots {
		if s.agent == nil || !s.agent.Alive() {
			continue
		}
		c := s.agent.Catalog()
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
	return true, cat.Offers(model)
}

// newObserverPub makes the publisher of h.obs for --relay-observer.
func newObserverPub(h *harness) (*observer.Publisher, error) {
	key, err := h.ownerKey()
	if err != nil {
		return nil, fmt.Errorf("buzz-acp: observer: conversation key for owner %s: %w", h.cfg.Owner, err)
	}
	return observer.NewPublisher(observer.Config{Bus: h.obs, Relay: obsRelay{h}, Key: h.cfg.Secret, Agent: h.cfg.AgentHex,
		Owner: h.cfg.Owner, ConvKey: key, Log: h.log, Every: h.t.obsEvery, PerWindow: h.t.obsPerWindow}), nil
}

// obsRelay is the observer's way to the relay: the websocket, behind the
// rate-limit gate, with the event size limit the relay announced.
type obsRelay struct{ h *harness }

func (r obsRelay) Gated() bool                        { return r.h.rc.Gated() }
func (r obsRelay) WaitGate(ctx context.Context) error { return r.h.rc.WaitGate(ctx) }
func (r obsRelay) MaxContent() int                    { return int(r.h.io.Info().MaxContent) }
func (r obsRelay) Publish(ctx context.Context, ev *nostr.Event) error {
	return r.h.rc.Publish(ctx, ev, false)
}

// nullable is s for a JSON payload, null when empty.
func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
