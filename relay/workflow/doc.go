// Package workflow reads workflow definitions in upstream's YAML shape
// (name, trigger with "on", steps with "id" and "action") and checks
// them, naming the line and column of each mistake; it also provides the
// pieces the relay's engine runs them with: cron schedules in a time zone,
// step templates and branch conditions. It knows nothing of relays.
package workflow
