package workspace

// Event kinds of the workspace (the numbers of block/buzz's
// crates/buzz-core/src/kind.rs, NIP-01 ranges: 1000–9999 regular,
// 10000–19999 replaceable, 20000–29999 ephemeral, 30000–39999
// addressable; 40000 and up are regular events the relay stores as such).
const (
	// KindProfile is NIP-01 user metadata (replaceable): names for prompt
	// labels and mentions, and agents' NIP-OA auth tags.
	KindProfile = 0
	// KindDeletion is a NIP-09 deletion request naming events by e tag.
	KindDeletion = 5
	// KindReaction is a NIP-25 reaction to the event its e tag names.
	KindReaction = 7

	// KindComment is a NIP-22 comment: root scope E/K/P, parent e/k/p. On
	// a pull request it may name a file, line and commit (TagCommentFile …)
	// and carry a review verdict (TagReview).
	KindComment = 1111
	// KindPullRequest is a NIP-34 pull request: a = the repository's
	// announcement, c = the tip, branch-name = the head branch,
	// TagPRBase = the branch it asks to merge into.
	KindPullRequest = 1618
	// KindPullRequestUpdate is a NIP-34 pull request update (E = the
	// pull request, c = the new tip); the relay publishes one when the
	// head branch moves.
	KindPullRequestUpdate = 1619
	// KindStatusOpen, KindStatusMerged, KindStatusClosed and
	// KindStatusDraft are NIP-34 status events (e root = the pull
	// request); a merged status names its merge-commit.
	KindStatusOpen   = 1630
	KindStatusMerged = 1631
	KindStatusClosed = 1632
	KindStatusDraft  = 1633
	// KindStream is a channel message (NIP-C7 chat in a NIP-29 group, h =
	// channel), the harness's default wake kind.
	KindStream = 9

	// KindAddUser is NIP-29 put-user: an admin adds a member (p, with an
	// optional role) to a channel.
	KindAddUser = 9000
	// KindRemoveUser is NIP-29 remove-user.
	KindRemoveUser = 9001
	// KindEditMetadata is NIP-29 edit-metadata: name, about, topic,
	// purpose, visibility, archived.
	KindEditMetadata = 9002
	// KindDeleteEvent is NIP-29 delete-event: a channel message tombstone.
	KindDeleteEvent = 9005
	// KindCreateGroup is NIP-29 create-group: a new channel named by a UUID.
	KindCreateGroup = 9007
	// KindDeleteGroup is NIP-29 delete-group.
	KindDeleteGroup = 9008
	// KindJoinRequest is NIP-29 join-request.
	KindJoinRequest = 9021
	// KindLeaveRequest is NIP-29 leave-request.
	KindLeaveRequest = 9022

	// KindPresence is a presence update (ephemeral): online, away, offline.
	KindPresence = 20001
	// KindTyping is a typing indicator in a channel (ephemeral).
	KindTyping = 20002
	// KindTurnStatus is a harness's coarse status of one turn (ephemeral):
	// h = channel, e = each message the turn handles, content = JSON
	// {state, at, startedAt, step, cause, by, owner, turn}; every reader
	// of the channel may see it. The detail stays in observer frames.
	KindTurnStatus = 20100
	// KindTurnStop asks the harness handling a message to stop its turn
	// (ephemeral): h = channel, e = the message. The harness obeys its
	// owner and the channel's admins only.
	KindTurnStop = 20101
	// KindAgentControl asks an agent's harness to pause or resume
	// (ephemeral): p = the agent, content "pause" or "resume". The harness
	// obeys the agent's owner only, and says its state in its presence.
	KindAgentControl = 20102
	// KindAuth is the NIP-42 AUTH event a client answers a relay's
	// challenge with; it travels in AUTH messages only.
	KindAuth = 22242
	// KindObserverFrame is a NIP-AO agent observer frame (ephemeral):
	// telemetry from agent to owner, controls from owner to agent, NIP-44
	// v2 encrypted.
	KindObserverFrame = 24200
	// KindMediaAuth is a Blossom (BUD-01) authorization token: a relay
	// media read carries one in its Authorization header.
	KindMediaAuth = 24242

	// KindAppData is NIP-78 application data (addressable). The web
	// client keeps a person's read marker for a channel in one, d =
	// ReadMarkerPrefix + channel; the relay serves this kind only to its
	// author, since read markers say who read what and when.
	KindAppData = 30078
	// KindEngram is a NIP-AE agent engram (addressable): a memory of an
	// agent, NIP-44 v2 encrypted to its owner, d = MemoryDTag.
	KindEngram = 30174
	// KindRepoAnnouncement is a NIP-34 repository announcement (d = the
	// repository's name).
	KindRepoAnnouncement = 30617
	// KindRepoState is a NIP-34 repository state announcement (d as the
	// announcement): one tag per ref, refs/heads/<b> or refs/tags/<t> →
	// commit, and HEAD. The relay signs one per hosted repository after
	// each push.
	KindRepoState = 30618
	// KindWorkflowDef is a workflow definition (addressable): d = workflow
	// UUID, h = channel, content = the definition.
	KindWorkflowDef = 30620
	// KindWorkflowRun is a workflow run as the relay records it
	// (addressable, relay-signed): d = run UUID, h = channel, a = the
	// workflow's address, status = the run's status; content = the run's
	// state and each step's start, end, status and output (JSON).
	KindWorkflowRun = 30622
	// KindWorkflowCancel asks the relay to cancel a run (d = run UUID),
	// from the workflow's publisher or a channel admin.
	KindWorkflowCancel = 46021

	// KindGroupMetadata is NIP-29 group metadata, signed by the relay
	// (d = channel): name, about, visibility, channel type, archived.
	KindGroupMetadata = 39000
	// KindGroupAdmins is NIP-29 group admins, signed by the relay.
	KindGroupAdmins = 39001
	// KindGroupMembers is NIP-29 group members, signed by the relay: one p
	// tag per member, with its role.
	KindGroupMembers = 39002
	// KindGroupRoles is NIP-29 group roles, signed by the relay.
	KindGroupRoles = 39003
	// KindChannelTombstone is the relay's record of a deleted channel
	// (d = channel), with its private flag and its last members. It keeps
	// the channel's events as hidden as before deletion and its UUID
	// reserved; the relay never serves it.
	KindChannelTombstone = 39008
	// KindMemberRecord is the relay's record of a run-time member or ban
	// (NIP-86; d = pubkey), signed by the relay and never served.
	KindMemberRecord = 39520
	// KindInviteRecord is the relay's record of an invite (d = hex SHA-256
	// of the token), signed by the relay and never served.
	KindInviteRecord = 39521

	// KindStreamV2 is a rich channel message (stream message v2).
	KindStreamV2 = 40002
	// KindEdit is an edit of a channel message (e = the edited message).
	KindEdit = 40003
	// KindReminder is a stream reminder, a default wake kind.
	KindReminder = 40007
	// KindDiff is a code diff posted to a channel.
	KindDiff = 40008
	// KindCanvas is a channel's canvas, its shared document.
	KindCanvas = 40100
	// KindMemberAdded notifies that a member joined a channel (p = member),
	// signed by the relay.
	KindMemberAdded = 44100
	// KindMemberRemoved notifies that a member left a channel.
	KindMemberRemoved = 44101
	// KindTurnMetric is a NIP-AM agent turn metric: one usage record per
	// turn, NIP-44 v2 encrypted to the owner.
	KindTurnMetric = 44200
	// KindForumPost starts a forum thread.
	KindForumPost = 45001
	// KindVote is a vote on a forum post.
	KindVote = 45002
	// KindForumComment answers a forum post (e = the post).
	KindForumComment = 45003
	// KindApprovalRequest asks a person to approve a workflow step, a
	// default wake kind; an agent's harness publishes one in the thread it
	// works in when the agent asks before acting (TagApprovalTool …).
	KindApprovalRequest = 46010
	// KindWorkflowTrigger runs a workflow by hand: d = workflow UUID,
	// content = inputs.
	KindWorkflowTrigger = 46020
	// KindApprovalGrant approves a waiting workflow step: d = hex
	// SHA-256 of the approval token; or an agent's permission request:
	// e = the request, TagApprovalOption = the option chosen.
	KindApprovalGrant = 46030
	// KindApprovalDeny denies a waiting workflow step, or an agent's
	// permission request (as KindApprovalGrant).
	KindApprovalDeny = 46031
)
