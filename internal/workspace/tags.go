package workspace

// Tags of a channel's NIP-29 metadata: what a create-group (9007) or
// edit-metadata (9002) event asks for and the relay's group metadata
// (39000) states. NIP-01's single-letter tags (e, p, d, h, t, k) stay
// literals where they are read: they are the indexable names filters
// spell as "#e", "#h", and a constant would hide that.
const (
	// TagName is the channel's name.
	TagName = "name"
	// TagAbout is the channel's description.
	TagAbout = "about"
	// TagTopic is the channel's topic.
	TagTopic = "topic"
	// TagPurpose is the channel's purpose.
	TagPurpose = "purpose"
	// TagChannelType is the channel's type: ChannelTypeStream or
	// ChannelTypeForum (39000 also states it in a t tag).
	TagChannelType = "channel_type"
	// TagVisibility asks for VisibilityOpen or VisibilityPrivate.
	TagVisibility = "visibility"
	// TagArchived is "true" on an archived channel.
	TagArchived = "archived"
	// TagChannelCreated, on the relay's 39000, is when the channel was
	// created (unix seconds of the event that created it): the 39000 is
	// re-signed at every change, so its own created_at says when it last
	// changed. Instances sharing a database and a restarted relay read the
	// channel's age from it.
	TagChannelCreated = "buzz-created"
	// TagPrivate, a tag of one element, marks a private channel (NIP-29);
	// TagClosed goes with it on 39000.
	TagPrivate = "private"
	// TagPublic, a tag of one element, marks an open channel; TagOpen goes
	// with it on 39000.
	TagPublic = "public"
	// TagClosed marks a channel only members may join (NIP-29).
	TagClosed = "closed"
	// TagOpen marks a channel anyone may join (NIP-29).
	TagOpen = "open"
	// TagHidden marks a channel that is not listed (NIP-29).
	TagHidden = "hidden"
)

// ReadMarkerPrefix starts the d tag of a read marker (KindAppData): the
// channel id follows, and for a thread's marker "/" and its root's id.
// The content is JSON {"t": created_at of the newest message read, "ids":
// the ids read in that second that unread counts would count}.
const ReadMarkerPrefix = "buzz:read:"

// NotifyPrefix starts the d tag of a person's notification setting for a
// channel (KindAppData): the channel id follows. The content is JSON
// {"level": "all" | "mentions" | "mute"}; the newest event wins.
const NotifyPrefix = "buzz:notify:"

// Values of the channel metadata tags.
const (
	// ChannelTypeStream is a chat channel, the default.
	ChannelTypeStream = "stream"
	// ChannelTypeForum is a channel of forum posts and their comments.
	ChannelTypeForum = "forum"
	// ChannelTypeDM is a direct-message conversation of a few people or
	// agents: always private, and it stays a DM.
	ChannelTypeDM = "dm"
	// VisibilityOpen is TagVisibility's value for an open channel.
	VisibilityOpen = "open"
	// VisibilityPrivate is TagVisibility's value for a private channel.
	VisibilityPrivate = "private"
)

// HeaderAuthTag is the HTTP header that carries a NIP-OA auth tag (its
// JSON text) next to a NIP-98 Authorization, on the relay's HTTP bridge
// and media reads.
const HeaderAuthTag = "x-auth-tag"

// Tags of a NIP-42 AUTH event (KindAuth): the relay's URL and the
// challenge it sent.
const (
	TagAuthRelay     = "relay"
	TagAuthChallenge = "challenge"
)

// TagRepoChannel on a NIP-34 repository announcement (KindRepoAnnouncement)
// names the channel the repository is shared with; the announcer must
// administer that channel.
const TagRepoChannel = "buzz-channel"

// TagRepoProtect on the owner's repository announcement lists the
// branches no one may push to directly (changes arrive by merged pull
// request); absent, the protected branch is DefaultProtectedBranch, and
// present with no values, none is.
const TagRepoProtect = "buzz-protect"

// DefaultProtectedBranch is the branch protected when the owner's
// announcement says nothing.
const DefaultProtectedBranch = "main"

// NIP-34 tag names the relay and the CLI read and write (34.md spells
// them; the a tag, d, p, e and t are NIP-01's).
const (
	TagRepoName        = "name"
	TagDescription     = "description" // a repository's, as a diff's
	TagRepoClone       = "clone"
	TagRepoRelays      = "relays"
	TagRepoMaintainers = "maintainers"
	TagRepoEUC         = "euc" // the r tag's marker: earliest unique commit
	TagSubject         = "subject"
	TagCommit          = "c"
	TagBranchName      = "branch-name"
	TagMergeBase       = "merge-base"
	TagMergeCommit     = "merge-commit"
)

// TagPRBase on a pull request names the branch it asks to merge into
// (NIP-34 leaves the target to the repository's HEAD; buzz names it).
const TagPRBase = "buzz-base"

// Tags of a comment (KindComment) on a pull request: where in the change
// it points (file path, line in the new file, commit), and the review
// verdict it carries, ReviewApprove or ReviewRequestChanges. A reviewer's
// newest verdict on a pull request is the one that counts.
const (
	TagCommentFile   = "buzz-file"
	TagCommentLine   = "buzz-line"
	TagCommentCommit = "buzz-commit"
	TagReview        = "buzz-review"

	ReviewApprove        = "approve"
	ReviewRequestChanges = "request-changes"
)

// TagCommentResolved on a reply in a line comment's thread marks the
// thread ResolvedYes or ResolvedNo (reopened); the newest mark counts, and
// anyone who may comment may set it. A reply in a thread carries the
// thread's file, line and commit tags too.
const (
	TagCommentResolved = "buzz-resolved"
	// TagReviewRequest on a comment on a pull request names (hex) whom
	// it asks to review the pull request; the comment p-tags them too.
	TagReviewRequest = "buzz-review-request"

	ResolvedYes = "resolved"
	ResolvedNo  = "open"
)

// Tags of a permission request: an agent's harness publishes a
// KindApprovalRequest in the thread of the message it is handling when the
// agent asks before acting (ACP session/request_permission); the agent's
// owner or a channel admin answers with a KindApprovalGrant or
// KindApprovalDeny (e = the request, h = its channel, p = the agent,
// TagApprovalOption = the option chosen). Requests and answers carry h, so
// only the channel's members read them.
const (
	// TagApprovalTool is the title of the tool call asking.
	TagApprovalTool = "tool"
	// TagApprovalCommand is the command the tool would run, truncated.
	TagApprovalCommand = "command"
	// TagApprovalDiff is ["diff", path, text]: a change the tool would
	// make, truncated.
	TagApprovalDiff = "diff"
	// TagApprovalOption is ["option", id, kind, name] on a request, one
	// per option the agent offers (ACP kinds allow_once, allow_always,
	// reject_once, reject_always); ["option", id] on an answer.
	TagApprovalOption = "option"
	// TagApprovalExpires is the unix time at which an unanswered request
	// is rejected.
	TagApprovalExpires = "expires"
	// TagApprovalReason is on the answer the harness signs as the agent
	// to close a request (the state clients show): ApprovalAnswered,
	// ApprovalTimeout or ApprovalCancelled.
	TagApprovalReason = "reason"
	// TagApprovalBy names, on that closing answer, who answered.
	TagApprovalBy = "by"
	// TagApprovalRule is the buzz-agent approval rule the command matched.
	TagApprovalRule = "rule"
)

// Tags of workflow events: a relay-signed workflow message or approval
// request names its workflow (address), its run and step, and the person
// whose rights it acts with; an approval request carries its token.
const (
	// TagWorkflow is ["workflow", "30620:<pubkey>:<d>", name]; the name
	// (the definition's) is for readers and may be missing.
	TagWorkflow = "workflow"
	// TagWorkflowRun is ["run", run UUID, step id].
	TagWorkflowRun = "run"
	// TagWorkflowPress is ["buzz-press", UUID] on a manual run (46020):
	// each press of Run, or `buzz workflows run`, is an event of its own,
	// where two alike within a second would have one id.
	TagWorkflowPress = "buzz-press"
	// TagWorkflowAttributed is ["attributed", publisher pubkey].
	TagWorkflowAttributed = "attributed"
	// TagWorkflowToken is ["token", approval token] on a workflow's
	// approval request; an answer's d is the token's hex SHA-256.
	TagWorkflowToken = "token"
	// TagWorkflowStatus is ["status", run status] on a KindWorkflowRun.
	TagWorkflowStatus = "status"
)

// Tags of an agent harness's presence (KindPresence), for clients'
// agents panels.
const (
	// TagPresenceModel is the model the agent runs, when configured.
	TagPresenceModel = "model"
	// TagPresenceUsage is ["usage", tokens today (UTC), dollars today when
	// known].
	TagPresenceUsage = "usage"
)

// Values of TagApprovalReason.
const (
	ApprovalAnswered  = "answered"
	ApprovalTimeout   = "timeout"
	ApprovalCancelled = "cancelled"
)
