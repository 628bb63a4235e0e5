package cli

import (
	"fmt"
	"io"

	"buzzbox/internal/workspace"
)

// command is one entry of the command table; --help is generated from it.
type command struct {
	Group   string // "" for top-level commands (keygen, whoami)
	Name    string
	Summary string
	Usage   string // arguments after the command words
	Example string
	Flags   []flagSpec
	MaxArgs int  // positional arguments accepted
	Offline bool // talks to no relay
	NoKey   bool // needs no key
	Run     func(*inv) error
}

func (c *command) path() string {
	if c.Group == "" {
		return c.Name
	}
	return c.Group + " " + c.Name
}

// Flag helpers for the table.
func str(name, value, help string) flagSpec { return flagSpec{Name: name, Value: value, Help: help} }
func list(name, value, help string) flagSpec {
	return flagSpec{Name: name, Value: value, Help: help + " (repeatable)", Kind: flagList}
}
func boolean(name, help string) flagSpec { return flagSpec{Name: name, Help: help, Kind: flagBool} }

func fChannel() flagSpec  { return str("channel", "UUID", "channel id") }
func fEvent() flagSpec    { return str("event", "ID", "event id (64 hex)") }
func fSince() flagSpec    { return str("since", "TS", "only events at or after this unix time") }
func fWorkflow() flagSpec { return str("workflow", "UUID", "workflow id") }
func fRepo() flagSpec {
	return str("repo", "OWNER/NAME", "a repository the relay hosts (owner hex or npub)")
}
func fPR() flagSpec { return str("pr", "ID", "the pull request's event id") }

const exampleChannel = "3f2a9c1e-8d4b-4c6a-9e2f-1b7d5a0c9e44"
const exampleEvent = "5c83da77af1dec6d7289834998ad7aafbd9e2191396d75ec3cc27f5a77226f36"
const exampleWorkflow = "8b1e4f0a-2c7d-4e93-a6b5-0d9c3e7f1a28"
const exampleToken = "c41d2e7b-9a03-4f6e-8b12-5e7a0c3d9f64"
const examplePubkey = "79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798"

// commands returns the command table in help order. Built on each call so
// that package initialisation does no work.
func commands() []command {
	return []command{
		{Name: "keygen", Summary: "make a new key pair and print it as JSON", Offline: true, NoKey: true, Run: runKeygen,
			Example: "buzz keygen > me.json"},
		{Name: "whoami", Summary: "print the pubkey (hex, npub) the CLI signs with", Offline: true, Run: runWhoami,
			Example: "BUZZ_PRIVATE_KEY=nsec1… buzz whoami"},

		{Group: "messages", Name: "send", Summary: "post a message to a channel (mentions, replies, forum kinds)",
			Usage: "--channel UUID --content TEXT|- [--reply-to ID] [--mention HEX|NPUB]… [--kind 9|45001|45003] [--broadcast] [--file PATH]…",
			Flags: []flagSpec{fChannel(), str("content", "TEXT|-", "message text; - reads stdin"), str("reply-to", "ID", "reply in the thread of this event"),
				list("mention", "HEX|NPUB", "mention this pubkey; @Name in the text mentions a channel member of that profile name, other @words stay text"), str("kind", "K", "9 (default), 45001 forum post, 45003 forum comment"),
				boolean("broadcast", "also show a thread reply in the channel"), list("file", "PATH", "attach a file: uploaded to the relay (Blossom), named in a NIP-92 imeta tag, its URL appended to the text; repeatable")},
			Example: "echo 'hi @Alice, see the diff' | buzz messages send --channel " + exampleChannel + " --content -", Run: runSend},
		{Group: "files", Name: "get", Summary: "download a file attached to a message (by sha256 or URL), checking its hash", Usage: "HASH|URL [--output FILE]", MaxArgs: 1,
			Flags:   []flagSpec{str("output", "FILE", "write the file here (default: stdout) and print its sha256, size and path as JSON")},
			Example: "buzz files get " + exampleEvent + " --output screenshot.png", Run: runFilesGet},
		{Group: "messages", Name: "get", Summary: "recent messages of a channel, oldest first",
			Usage: "--channel UUID [--limit N] [--before TS] [--since TS] [--kinds a,b,…]",
			Flags: []flagSpec{fChannel(), str("limit", "N", "how many (default 50, at most 200)"), str("before", "TS", "only events before this unix time"), fSince(),
				str("kinds", "a,b,…", "event kinds instead of the message kinds")},
			Example: "buzz messages get --channel " + exampleChannel + " --limit 20", Run: runGet},
		{Group: "messages", Name: "list", Summary: "every message of a channel, newest first, streamed page by page",
			Usage: "--channel UUID [--limit N] [--before TS] [--since TS] [--kinds a,b,…]",
			Flags: []flagSpec{fChannel(), str("limit", "N", "stop after N events (default: all)"), str("before", "TS", "only events before this unix time"), fSince(),
				str("kinds", "a,b,…", "event kinds instead of the message kinds")},
			Example: "buzz messages list --channel " + exampleChannel + " > all.json", Run: runList},
		{Group: "messages", Name: "thread", Summary: "a whole thread: its root and replies, oldest first",
			Usage:   "--channel UUID --event ID [--limit N] [--depth-limit D]",
			Flags:   []flagSpec{fChannel(), str("event", "ID", "any event of the thread"), str("limit", "N", "replies (default 100, at most 500)"), str("depth-limit", "D", "reply depth the relay should stop at")},
			Example: "buzz messages thread --channel " + exampleChannel + " --event " + exampleEvent, Run: runThread},
		{Group: "messages", Name: "search", Summary: "full-text search over messages, thread replies, forum posts and pull requests' comments, by text and/or author",
			Usage:   "[--query Q] [--author HEX|NPUB|NAME] [--since TS] [--limit N]",
			Flags:   []flagSpec{str("query", "Q", "text to search for: words, \"phrases\", from:@name, in:#channel, has:file, before:/after:YYYY-MM-DD"), str("author", "WHO", "author as hex, npub or profile name"), fSince(), str("limit", "N", "how many (default 20, at most 100)")},
			Example: "buzz messages search --query 'release notes' --limit 5", Run: runSearch},
		{Group: "messages", Name: "edit", Summary: "replace the text of one of your messages",
			Usage: "--event ID --content TEXT|-", Flags: []flagSpec{fEvent(), str("content", "TEXT|-", "new text; - reads stdin")},
			Example: "buzz messages edit --event " + exampleEvent + " --content 'fixed typo'", Run: runEdit},
		{Group: "messages", Name: "delete", Summary: "delete a message (kind 9005 tombstone)",
			Usage:   "--event ID [--action-id UUID] [--reason-code S] [--public-reason S]",
			Flags:   []flagSpec{fEvent(), str("action-id", "UUID", "moderation action id"), str("reason-code", "S", "machine-readable reason"), str("public-reason", "S", "reason shown to members")},
			Example: "buzz messages delete --event " + exampleEvent, Run: runDelete},
		{Group: "messages", Name: "send-diff", Summary: "post a code diff (kind 40008), cut at a hunk boundary past 60 KiB",
			Usage: "--channel UUID --diff TEXT|- --repo URL --commit SHA [--file P] [--parent-commit SHA] [--source-branch B --target-branch B] [--pr N] [--lang L] [--description D] [--reply-to ID]",
			Flags: []flagSpec{fChannel(), str("diff", "TEXT|-", "unified diff; - reads stdin"), str("repo", "URL", "http(s) URL of the repository"), str("commit", "SHA", "commit (at least 7 hex)"),
				str("file", "PATH", "file the diff is about"), str("parent-commit", "SHA", "parent commit"), str("source-branch", "B", "source branch"), str("target-branch", "B", "target branch"),
				str("pr", "N", "pull request number"), str("lang", "L", "language (default: from --file's extension)"), str("description", "D", "what the change does"), str("reply-to", "ID", "post in this event's thread")},
			Example: "git diff | buzz messages send-diff --channel " + exampleChannel + " --diff - --repo https://git.example/r.git --commit 1a2b3c4", Run: runSendDiff},
		{Group: "messages", Name: "vote", Summary: "vote on a forum post (kind 45002)",
			Usage: "--event ID --direction up|down", Flags: []flagSpec{fEvent(), str("direction", "up|down", "vote direction")},
			Example: "buzz messages vote --event " + exampleEvent + " --direction up", Run: runVote},

		{Group: "turns", Name: "stop", Summary: "stop the agent's turn on a message (the agent's owner or a channel admin)",
			Usage: "--event ID", Flags: []flagSpec{fEvent()},
			Example: "buzz turns stop --event " + exampleEvent, Run: runTurnStop},
		{Group: "reactions", Name: "add", Summary: "react to an event", Usage: "--event ID --emoji E [--emoji-url URL]",
			Flags:   []flagSpec{fEvent(), str("emoji", "E", "emoji, or custom shortcode with --emoji-url"), str("emoji-url", "URL", "image of a custom emoji")},
			Example: "buzz reactions add --event " + exampleEvent + " --emoji 👍", Run: runReactAdd},
		{Group: "reactions", Name: "remove", Summary: "take back your reaction", Usage: "--event ID --emoji E",
			Flags:   []flagSpec{fEvent(), str("emoji", "E", "the emoji you reacted with")},
			Example: "buzz reactions remove --event " + exampleEvent + " --emoji 👍", Run: runReactRemove},
		{Group: "reactions", Name: "get", Summary: "reactions on an event, grouped by emoji", Usage: "--event ID",
			Flags: []flagSpec{fEvent()}, Example: "buzz reactions get --event " + exampleEvent, Run: runReactGet},

		{Group: "channels", Name: "list", Summary: "channels on the relay", Usage: "[--visibility open|private] [--member] [--limit N]",
			Flags:   []flagSpec{str("visibility", "open|private", "only open or only private channels"), boolean("member", "only channels you are a member of"), str("limit", "N", "how many (default 500)")},
			Example: "buzz channels list --member", Run: runChannelsList},
		{Group: "channels", Name: "get", Summary: "one channel's metadata, or null", Usage: "--channel UUID",
			Flags: []flagSpec{fChannel()}, Example: "buzz channels get --channel " + exampleChannel, Run: runChannelsGet},
		{Group: "channels", Name: "members", Summary: "members of a channel and their roles", Usage: "--channel UUID",
			Flags: []flagSpec{fChannel()}, Example: "buzz channels members --channel " + exampleChannel, Run: runChannelsMembers},
		{Group: "channels", Name: "join", Summary: "ask to join a channel (kind 9021)", Usage: "--channel UUID",
			Flags: []flagSpec{fChannel()}, Example: "buzz channels join --channel " + exampleChannel, Run: groupCmd(workspace.KindJoinRequest, nil)},
		{Group: "channels", Name: "leave", Summary: "leave a channel (kind 9022)", Usage: "--channel UUID",
			Flags: []flagSpec{fChannel()}, Example: "buzz channels leave --channel " + exampleChannel, Run: groupCmd(workspace.KindLeaveRequest, nil)},
		{Group: "channels", Name: "create", Summary: "create a channel (kind 9007) with a new UUID",
			Usage: "--name N [--type stream|forum] [--visibility open|private] [--description D] [--ttl S]",
			Flags: []flagSpec{str("name", "N", "channel name"), str("type", "stream|forum", "channel type (default stream)"), str("visibility", "open|private", "who can find and read it (default open)"),
				str("description", "D", "what the channel is for"), str("ttl", "S", "message lifetime in seconds")},
			Example: "buzz channels create --name release   (an open stream; --type forum, --visibility private)", Run: runChannelsCreate},
		{Group: "channels", Name: "add-member", Summary: "add a member (kind 9000)", Usage: "--channel UUID --pubkey HEX|NPUB [--role owner|admin|member|guest|bot]",
			Flags:   []flagSpec{fChannel(), str("pubkey", "HEX|NPUB", "who to add"), str("role", "ROLE", "owner, admin, member (default), guest or bot")},
			Example: "buzz channels add-member --channel " + exampleChannel + " --pubkey " + examplePubkey + " --role bot", Run: runAddMember},
		{Group: "channels", Name: "remove-member", Summary: "remove a member (kind 9001)", Usage: "--channel UUID --pubkey HEX|NPUB",
			Flags:   []flagSpec{fChannel(), str("pubkey", "HEX|NPUB", "who to remove")},
			Example: "buzz channels remove-member --channel " + exampleChannel + " --pubkey " + examplePubkey, Run: runRemoveMember},
		{Group: "channels", Name: "topic", Summary: "set the channel topic (kind 9002)", Usage: "--channel UUID --topic T",
			Flags:   []flagSpec{fChannel(), str("topic", "T", "new topic")},
			Example: "buzz channels topic --channel " + exampleChannel + " --topic 'v2 launch'", Run: metaCmd("topic")},
		{Group: "channels", Name: "purpose", Summary: "set the channel purpose (kind 9002)", Usage: "--channel UUID --purpose P",
			Flags:   []flagSpec{fChannel(), str("purpose", "P", "new purpose")},
			Example: "buzz channels purpose --channel " + exampleChannel + " --purpose 'ship v2'", Run: metaCmd("purpose")},
		{Group: "channels", Name: "archive", Summary: "archive a channel (kind 9002)", Usage: "--channel UUID",
			Flags: []flagSpec{fChannel()}, Example: "buzz channels archive --channel " + exampleChannel, Run: groupCmd(workspace.KindEditMetadata, []string{"archived", "true"})},
		{Group: "channels", Name: "unarchive", Summary: "unarchive a channel (kind 9002)", Usage: "--channel UUID",
			Flags: []flagSpec{fChannel()}, Example: "buzz channels unarchive --channel " + exampleChannel, Run: groupCmd(workspace.KindEditMetadata, []string{"archived", "false"})},
		{Group: "channels", Name: "delete", Summary: "delete a channel (kind 9008)", Usage: "--channel UUID",
			Flags: []flagSpec{fChannel()}, Example: "buzz channels delete --channel " + exampleChannel, Run: groupCmd(workspace.KindDeleteGroup, nil)},
		{Group: "channels", Name: "search", Summary: "find channels by name", Usage: "--query Q [--exact] [--include-archived]",
			Flags:   []flagSpec{str("query", "Q", "name or part of it"), boolean("exact", "whole name, case-insensitive"), boolean("include-archived", "also archived channels")},
			Example: "buzz channels search --query release", Run: runChannelsSearch},

		{Group: "users", Name: "get", Summary: "profiles (kind 0), yours by default", Usage: "[--pubkey HEX|NPUB]… | --name TEXT",
			Flags:   []flagSpec{list("pubkey", "HEX|NPUB", "whose profile"), str("name", "TEXT", "find profiles whose name contains TEXT")},
			Example: "buzz users get --name alice", Run: runUsersGet},
		{Group: "users", Name: "set-profile", Summary: "update your profile (kind 0), keeping fields you do not pass",
			Usage: "[--name N] [--display-name N] [--about T] [--avatar URL] [--nip05 ID]",
			Flags: []flagSpec{str("name", "N", "short name"), str("display-name", "N", "display name others @mention"), str("about", "T", "about text"),
				str("avatar", "URL", "picture URL"), str("nip05", "ID", "NIP-05 identifier")},
			Example: "buzz users set-profile --display-name 'Build Bot'", Run: runSetProfile},
		{Group: "users", Name: "set-presence", Summary: "announce presence (kind 20001, over websocket)", Usage: "--status online|away|offline",
			Flags: []flagSpec{str("status", "S", "online, away or offline")}, Example: "buzz users set-presence --status online", Run: runPresence},

		{Group: "canvas", Name: "get", Summary: "print a channel's canvas text, or null", Usage: "--channel UUID",
			Flags: []flagSpec{fChannel()}, Example: "buzz canvas get --channel " + exampleChannel, Run: runCanvasGet},
		{Group: "canvas", Name: "set", Summary: "replace a channel's canvas (kind 40100)", Usage: "--channel UUID --content TEXT|-",
			Flags:   []flagSpec{fChannel(), str("content", "TEXT|-", "canvas text; - reads stdin")},
			Example: "buzz canvas set --channel " + exampleChannel + " --content - < CANVAS.md", Run: runCanvasSet},

		{Group: "feed", Name: "get", Summary: "events that name you: mentions, approvals, activity, newest first",
			Usage:   "[--since TS] [--limit N] [--types mentions,needs_action,activity,agent_activity]",
			Flags:   []flagSpec{fSince(), str("limit", "N", "how many (default 20, at most 50)"), str("types", "LIST", "comma-separated feed types")},
			Example: "buzz feed get --types needs_action", Run: runFeed},

		{Name: "inbox", Summary: "what needs you: mentions, replies in your threads, approvals waiting for you, reviews requested of you, direct messages; unread first",
			Usage: "[--unread]", Flags: []flagSpec{boolean("unread", "only what is unread (after your read markers)")},
			Example: "buzz inbox --unread", Run: runInbox},
		{Group: "approvals", Name: "list", Summary: "agents' permission requests nobody has answered yet (kind 46010), newest first",
			Usage: "[--channel UUID]", Flags: []flagSpec{fChannel()}, Example: "buzz approvals list --channel " + exampleChannel, Run: runApprovalsList},
		{Group: "approvals", Name: "answer", Summary: "answer an agent's permission request (kind 46030 allows, 46031 rejects); its owner or a channel admin only",
			Usage: "--request ID --allow-once|--allow-always|--reject|--option ID",
			Flags: []flagSpec{str("request", "ID", "the request's event id"), boolean("allow-once", "allow this one call"),
				boolean("allow-always", "allow such calls for the rest of the agent's session"), boolean("reject", "refuse it"),
				str("option", "ID", "the agent's option id, as list shows it")},
			Example: "buzz approvals answer --request " + exampleEvent + " --allow-once", Run: runApprovalsAnswer},

		{Group: "pr", Name: "create", Summary: "open a pull request (NIP-34 kind 1618) from a branch pushed to a repository the relay hosts",
			Usage: "--repo OWNER/NAME --head BRANCH [--base main] --title TEXT [--body TEXT|-] [--draft] [--label L]… [--reviewer WHO]…",
			Flags: []flagSpec{fRepo(), str("head", "BRANCH", "the branch to merge (pushed already)"), str("base", "BRANCH", "the branch to merge into (default main)"),
				str("title", "TEXT", "the pull request's subject"), str("body", "TEXT|-", "description (markdown); - reads stdin"),
				boolean("draft", "open it as a draft (status 1633)"), list("label", "L", "a label (t tag)"),
				list("reviewer", "WHO", "ask WHO (npub, hex or profile name) for a review: a p tag; it lands in their inbox")},
			Example: "buzz pr create --repo " + examplePubkey + "/proj --head fix-login --title 'Fix login' --body - < NOTES.md", Run: runPRCreate},
		{Group: "pr", Name: "list", Summary: "pull requests of a repository, newest first", Usage: "--repo OWNER/NAME [--state open|merged|closed|draft|all]",
			Flags: []flagSpec{fRepo(), str("state", "S", "open (default), merged, closed, draft or all")}, Example: "buzz pr list --repo " + examplePubkey + "/proj", Run: runPRList},
		{Group: "pr", Name: "view", Summary: "a pull request: description, status, tip, comments and reviews", Usage: "--pr ID",
			Flags: []flagSpec{fPR()}, Example: "buzz pr view --pr " + exampleEvent, Run: runPRView},
		{Group: "pr", Name: "diff", Summary: "a pull request's unified diff against its merge base (from the relay's git)", Usage: "--pr ID",
			Flags: []flagSpec{fPR()}, Example: "buzz pr diff --pr " + exampleEvent, Run: runPRDiff},
		{Group: "pr", Name: "comment", Summary: "comment on a pull request (NIP-22 kind 1111), optionally on a file line of a commit; a reply keeps its thread's line",
			Usage: "--pr ID --body TEXT|- [--file PATH --line N --commit SHA] [--reply-to ID]",
			Flags: []flagSpec{fPR(), str("body", "TEXT|-", "comment text; - reads stdin"), str("file", "PATH", "file the comment is about"),
				str("line", "N", "line in the new file"), str("commit", "SHA", "commit the line is in"), str("reply-to", "ID", "answer this comment")},
			Example: "buzz pr comment --pr " + exampleEvent + " --file main.go --line 12 --body 'off by one?'", Run: runPRComment},
		{Group: "pr", Name: "request-review", Summary: "ask someone (a person or an agent) to review a pull request: a comment naming them in buzz-review-request",
			Usage:   "--pr ID --reviewer HEX|NPUB [--body TEXT|-]",
			Flags:   []flagSpec{fPR(), str("reviewer", "HEX|NPUB", "whom to ask"), str("body", "TEXT|-", "what to look at")},
			Example: "buzz pr request-review --pr " + exampleEvent + " --reviewer " + examplePubkey, Run: runPRRequestReview},
		{Group: "pr", Name: "resolve", Summary: "mark a line comment's thread resolved (or --reopen it): a reply with buzz-resolved",
			Usage:   "--pr ID --comment ID [--reopen]",
			Flags:   []flagSpec{fPR(), str("comment", "ID", "a comment of the thread"), boolean("reopen", "mark it open again")},
			Example: "buzz pr resolve --pr " + exampleEvent + " --comment " + exampleEvent, Run: runPRResolve},
		{Group: "pr", Name: "checkout", Summary: "fetch a pull request's head branch into a local branch (git, with git-credential-nostr) and switch to it",
			Usage:   "--pr ID [--branch NAME]",
			Flags:   []flagSpec{fPR(), str("branch", "NAME", "local branch (default: the pull request's head branch)")},
			Example: "buzz pr checkout --pr " + exampleEvent + " && git commit -am 'fix' && git push", Run: runPRCheckout},
		{Group: "pr", Name: "review", Summary: "approve a pull request or request changes (a kind 1111 with buzz-review)",
			Usage:   "--pr ID --approve|--request-changes [--body TEXT|-]",
			Flags:   []flagSpec{fPR(), boolean("approve", "approve it"), boolean("request-changes", "ask for changes before merging"), str("body", "TEXT|-", "review summary")},
			Example: "buzz pr review --pr " + exampleEvent + " --approve --body 'looks good'", Run: runPRReview},
		{Group: "pr", Name: "merge", Summary: "merge a pull request with the relay's git, then publish its merged status (1631)", Usage: "--pr ID",
			Flags: []flagSpec{fPR()}, Example: "buzz pr merge --pr " + exampleEvent, Run: runPRMerge},
		{Group: "pr", Name: "close", Summary: "close a pull request without merging (status 1632)", Usage: "--pr ID [--body TEXT|-]",
			Flags: []flagSpec{fPR(), str("body", "TEXT|-", "why")}, Example: "buzz pr close --pr " + exampleEvent, Run: statusCmd(workspace.KindStatusClosed)},
		{Group: "pr", Name: "reopen", Summary: "reopen a pull request, or mark a draft ready (status 1630)", Usage: "--pr ID",
			Flags: []flagSpec{fPR()}, Example: "buzz pr reopen --pr " + exampleEvent, Run: statusCmd(workspace.KindStatusOpen)},
		{Group: "pr", Name: "draft", Summary: "mark a pull request a draft (status 1633)", Usage: "--pr ID",
			Flags: []flagSpec{fPR()}, Example: "buzz pr draft --pr " + exampleEvent, Run: statusCmd(workspace.KindStatusDraft)},

		{Group: "workflows", Name: "list", Summary: "workflow definitions (kind 30620) of a channel", Usage: "--channel UUID",
			Flags: []flagSpec{fChannel()}, Example: "buzz workflows list --channel " + exampleChannel, Run: runWorkflowsList},
		{Group: "workflows", Name: "get", Summary: "one workflow definition, or null", Usage: "--workflow UUID",
			Flags: []flagSpec{fWorkflow()}, Example: "buzz workflows get --workflow " + exampleWorkflow, Run: runWorkflowsGet},
		{Group: "workflows", Name: "run", Summary: "run a workflow by hand (kind 46020), or re-run a finished run with its trigger's values",
			Usage: "--workflow UUID [--inputs JSON] [--rerun RUN]",
			Flags: []flagSpec{fWorkflow(), str("inputs", "JSON", "input variables, a JSON object"),
				str("rerun", "RUN", "run again this finished run of the workflow, with the values its trigger had (--inputs is then not allowed)")},
			Example: "buzz workflows run --workflow " + exampleWorkflow + ` --inputs '{"version":"1.4.0"}'`, Run: runWorkflowsTrigger},
		{Group: "workflows", Name: "trigger", Summary: "run a workflow by hand (kind 46020); upstream's name for run", Usage: "--workflow UUID [--inputs JSON]",
			Flags:   []flagSpec{fWorkflow(), str("inputs", "JSON", "input variables, a JSON object")},
			Example: "buzz workflows trigger --workflow " + exampleWorkflow + ` --inputs '{"version":"1.4.0"}'`, Run: runWorkflowsTrigger},
		{Group: "workflows", Name: "approve", Summary: "approve (kind 46030) or deny (kind 46031) a workflow step waiting on you",
			Usage: "--token UUID [--approved true|false] [--note TEXT]",
			Flags: []flagSpec{str("token", "UUID", "approval token from the request"), str("approved", "true|false", "false denies the step (default true)"),
				str("note", "TEXT", "note sent with the decision (default empty)")},
			Example: "buzz workflows approve --token " + exampleToken + " --note 'release notes look right'", Run: runWorkflowsApprove},
		{Group: "workflows", Name: "create", Summary: "publish a workflow definition (kind 30620); the relay refuses an invalid one, naming its line",
			Usage:   "--channel UUID --file PATH [--workflow UUID]",
			Flags:   []flagSpec{fChannel(), str("file", "PATH", "the definition, YAML"), str("workflow", "UUID", "replace this workflow (default a new id)")},
			Example: "buzz workflows create --channel " + exampleChannel + " --file deploy.yaml", Run: runWorkflowsCreate},
		{Group: "workflows", Name: "cancel", Summary: "cancel a workflow run (kind 46021)", Usage: "--run UUID",
			Flags:   []flagSpec{str("run", "UUID", "the run's id, as runs shows it")},
			Example: "buzz workflows cancel --run " + exampleWorkflow, Run: runWorkflowsCancel},
		{Group: "workflows", Name: "runs", Summary: "runs of a workflow with each step's status and output (kind 30622)", Usage: "--workflow UUID [--limit N]",
			Flags:   []flagSpec{fWorkflow(), str("limit", "N", "how many runs (default 20)")},
			Example: "buzz workflows runs --workflow " + exampleWorkflow, Run: runWorkflowsRuns},

		{Group: "members", Name: "add", Summary: "let a pubkey use the relay (NIP-86 allowpubkey; owner or admin only)",
			Usage: "--pubkey HEX|NPUB [--reason TEXT]", Flags: []flagSpec{str("pubkey", "HEX|NPUB", "who to let in"), str("reason", "TEXT", "note kept with the entry")},
			Example: "buzz members add --pubkey " + examplePubkey + " --reason 'release bot'", Run: memberCmd("allowpubkey", true)},
		{Group: "members", Name: "remove", Summary: "take a key's relay access back (NIP-86 disallowpubkey): it leaves every channel, its subscriptions and invites end",
			Usage: "--pubkey HEX|NPUB", Flags: []flagSpec{str("pubkey", "HEX|NPUB", "who to remove")},
			Example: "buzz members remove --pubkey " + examplePubkey, Run: memberCmd("disallowpubkey", false)},
		{Group: "members", Name: "list", Summary: "relay members by list (NIP-86 listallowedpubkeys), or the banned ones",
			Usage: "[--banned]", Flags: []flagSpec{boolean("banned", "list banned pubkeys instead")},
			Example: "buzz members list", Run: runMembersList},
		{Group: "members", Name: "ban", Summary: "ban a pubkey and the agents it attests; their connections close at once",
			Usage: "--pubkey HEX|NPUB [--reason TEXT]", Flags: []flagSpec{str("pubkey", "HEX|NPUB", "who to ban"), str("reason", "TEXT", "why, kept with the ban")},
			Example: "buzz members ban --pubkey " + examplePubkey + " --reason spam", Run: memberCmd("banpubkey", true)},
		{Group: "members", Name: "unban", Summary: "lift a ban (NIP-86 unbanpubkey)",
			Usage: "--pubkey HEX|NPUB", Flags: []flagSpec{str("pubkey", "HEX|NPUB", "who to unban")},
			Example: "buzz members unban --pubkey " + examplePubkey, Run: memberCmd("unbanpubkey", false)},
		{Group: "members", Name: "invite", Summary: "make a single-use invite link that adds its redeemer to the relay and channels (compact: the link alone)",
			Usage:   "[--channel UUID]… [--expires DURATION]",
			Flags:   []flagSpec{list("channel", "UUID", "channel the invitee joins"), str("expires", "DURATION", "how long the link is good (default 168h, at most 720h)")},
			Example: "buzz members invite --channel " + exampleChannel + " --expires 24h --format compact", Run: runMembersInvite},
		{Group: "members", Name: "invites", Summary: "pending invite links you may revoke (NIP-86 listinvites: id, maker, channels, expiry; never the link), or revoke one",
			Usage: "[--revoke ID]", Flags: []flagSpec{str("revoke", "ID", "revoke the invite with this id (revokeinvite); its link stops working at once")},
			Example: "buzz members invites --revoke 3f2a9c0b7d1e4a65", Run: runMembersInvites},

		{Group: "agents", Name: "attest", Summary: "sign a NIP-OA attestation of an agent key with your key; paste it into BUZZ_AUTH_TAG",
			Usage: "--agent HEX|NPUB [--kinds K] [--until TIME]", Offline: true,
			Flags: []flagSpec{str("agent", "HEX|NPUB", "the agent's pubkey"), str("kinds", "K", "only events of this kind (one kind: every clause must hold)"),
				str("until", "TIME", "only events before TIME: unix seconds, RFC 3339, or a duration from now like 720h")},
			Example: "BUZZ_AUTH_TAG=$(buzz agents attest --agent " + examplePubkey + " --until 720h)", Run: runAgentsAttest},
		{Group: "agents", Name: "usage", Summary: "your agents' token use and cost per UTC day, from the turn metrics (NIP-AM kind 44200) they encrypt to you",
			Usage:   "[--agent HEX|NPUB] [--days N]",
			Flags:   []flagSpec{str("agent", "HEX|NPUB", "only this agent"), str("days", "N", "today and the N-1 days before (default 1, at most 31)")},
			Example: "buzz agents usage --days 7", Run: runAgentsUsage},
		{Group: "agents", Name: "pause", Summary: "pause one of your agents: it takes no turns (messages wait, told once) until resumed",
			Usage: "--agent HEX|NPUB", Flags: []flagSpec{str("agent", "HEX|NPUB", "the agent's pubkey")},
			Example: "buzz agents pause --agent " + examplePubkey, Run: runAgentsControl("pause")},
		{Group: "agents", Name: "resume", Summary: "resume a paused agent: what waited runs in order",
			Usage: "--agent HEX|NPUB", Flags: []flagSpec{str("agent", "HEX|NPUB", "the agent's pubkey")},
			Example: "buzz agents resume --agent " + examplePubkey, Run: runAgentsControl("resume")},

		{Group: "mem", Name: "ls", Summary: "list your memory slugs (NIP-AE), core excluded", Usage: "[--owner HEX] [--agent HEX]",
			Flags: memFlags(), Example: "buzz mem ls", Run: runMemLs},
		{Group: "mem", Name: "get", Summary: "print a memory's value (core: the profile) as raw text", Usage: "SLUG [--owner HEX] [--agent HEX]", MaxArgs: 1,
			Flags: memFlags(), Example: "buzz mem get core", Run: runMemGet},
		{Group: "mem", Name: "hash", Summary: "SHA-256 of a memory's value, one hex line (for mem patch --base-hash)", Usage: "SLUG [--owner HEX] [--agent HEX]", MaxArgs: 1,
			Flags: memFlags(), Example: "buzz mem hash notes/today", Run: runMemHash},
		{Group: "mem", Name: "set", Summary: "write a memory; slug core holds identity, rules and goals", Usage: "SLUG VALUE|- [--owner HEX] [--allow-empty]", MaxArgs: 2,
			Flags:   []flagSpec{str("owner", "HEX", "owner pubkey (default: from BUZZ_AUTH_TAG)"), boolean("allow-empty", "accept an empty value from stdin")},
			Example: `buzz mem set core "I am the release bot; I answer to @Dana."`, Run: runMemSet},
		{Group: "mem", Name: "patch", Summary: "apply a unified diff to a memory, strictly at its line numbers",
			Usage: "SLUG (--base-hash SHA256 | --no-base-hash) [--patch-file P] [--dry-run] [--allow-empty] [--owner HEX]", MaxArgs: 1,
			Flags: []flagSpec{str("base-hash", "SHA256", "hash of the value the diff was made against (buzz mem hash)"), boolean("no-base-hash", "skip the concurrent-edit check"),
				str("patch-file", "P", "read the diff from P instead of stdin"), boolean("dry-run", "check and report, write nothing"),
				boolean("allow-empty", "accept an empty result"), str("owner", "HEX", "owner pubkey (default: from BUZZ_AUTH_TAG)")},
			Example: `diff -u old.txt new.txt | buzz mem patch notes/today --base-hash "$(buzz mem hash notes/today)"`, Run: runMemPatch},
		{Group: "mem", Name: "rm", Summary: "tombstone a memory", Usage: "SLUG [--owner HEX]", MaxArgs: 1,
			Flags: []flagSpec{str("owner", "HEX", "owner pubkey (default: from BUZZ_AUTH_TAG)")}, Example: "buzz mem rm notes/today", Run: runMemRm},
	}
}

func memFlags() []flagSpec {
	return []flagSpec{str("owner", "HEX", "owner pubkey (default: from BUZZ_AUTH_TAG)"), str("agent", "HEX", "read an agent's memory as its owner")}
}

// writeFooter prints the global options, generated from globalFlags, the
// environment the CLI reads and the output contract.
func writeFooter(w io.Writer, title string) {
	fmt.Fprintln(w, title)
	for _, f := range globalFlags {
		left := "--" + f.Name
		if f.Value != "" {
			left += " " + f.Value
		}
		fmt.Fprintf(w, "  %-24s %s\n", left, f.Help)
	}
	fmt.Fprintf(w, "  %-24s %s\n", "--help", "print this help and exit")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Environment:")
	for _, v := range [][2]string{
		{workspace.EnvRelayURL, "relay base URL, when --relay is not given"},
		{workspace.EnvPrivateKey, "secret key (hex or nsec), when --private-key is not given"},
		{workspace.EnvKeyFile, "a 0600 file holding the key, when neither is set"},
		{workspace.EnvAuthTag, "NIP-OA attestation, when --auth-tag is not given"},
		{workspace.EnvTimeoutSecs, fmt.Sprintf("seconds one request may take (default %d)", int(defaultTimeout.Seconds()))},
		{workspace.EnvConnectTimeoutSecs, fmt.Sprintf("seconds to connect (default %d)", int(defaultConnectTimeout.Seconds()))},
	} {
		fmt.Fprintf(w, "  %-26s %s\n", v[0], v[1])
	}
	fmt.Fprint(w, `
Output: JSON on stdout. Errors: one JSON line on stderr,
{"error":"<category>","message":"…","retryable":false}.
Exit codes: 0 ok, 1 user error or not found, 2 relay/network error or
delivery unknown, 3 auth or key error, 4 other error, 5 write conflict.
`)
}

// printHelp prints the overview, or one group's commands.
func printHelp(w io.Writer, table []command, words []string) {
	group := ""
	if len(words) > 0 && words[0] != "help" {
		group = words[0]
	} else if len(words) > 1 {
		group = words[1]
	}
	fmt.Fprintln(w, "buzz — talk to a Buzz relay: messages, channels, reactions, memory")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage: buzz [global options] <group> <command> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	for _, c := range table {
		if group != "" && c.Group != group {
			continue
		}
		fmt.Fprintf(w, "  %-24s %s\n", c.path(), c.Summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run buzz <group> <command> --help for flags and an example.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Example:")
	shown := 0
	for _, c := range table {
		if (group == "" && (c.Name == "whoami" || c.path() == "messages send" || c.path() == "messages get")) || (group != "" && c.Group == group && shown < 2) {
			fmt.Fprintf(w, "  %s\n", c.Example)
			shown++
		}
	}
	fmt.Fprintln(w)
	writeFooter(w, "Global options (before or after the command):")
}

func printCommandHelp(w io.Writer, c *command) {
	fmt.Fprintf(w, "buzz %s — %s\n\n", c.path(), c.Summary)
	fmt.Fprintf(w, "Usage: buzz %s %s\n", c.path(), c.Usage)
	if len(c.Flags) > 0 {
		fmt.Fprintln(w, "\nFlags:")
		for _, f := range c.Flags {
			left := "--" + f.Name
			if f.Value != "" {
				left += " " + f.Value
			}
			fmt.Fprintf(w, "  %-24s %s\n", left, f.Help)
		}
	}
	fmt.Fprintf(w, "\nExample:\n  %s\n\n", c.Example)
	writeFooter(w, "Global options:")
}
