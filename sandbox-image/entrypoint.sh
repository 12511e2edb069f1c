#!/bin/sh
# framestream-entrypoint: the sandbox image's entrypoint (installed as /usr/local/bin/framestream-entrypoint).
#
# Checks what framestream needs from its container and says what it found, one line each, then replaces itself
# with `framestream serve` and nothing else: browsers start only when a frame goes live. It never weakens
# Chromium's sandbox on its own: without user namespaces it stops and says how to fix that, and only
# FRAMESTREAM_CHROME_SANDBOX=off (the operator's explicit choice) runs Chromium without it, with a warning.
#
# Environment (besides framestream's own, see README.md):
#   FRAMESTREAM_HOST             address to listen on (default 0.0.0.0)
#   FRAMESTREAM_PORT             port (default 7682)
#   FRAMESTREAM_CHROME_SANDBOX   auto (default) | on | off
# Extra arguments are passed to `framestream serve` after ours (a later flag wins).
set -eu

log() { printf 'framestream-entrypoint: %s\n' "$*" >&2; }
die() {
    log "ERROR: $*"
    exit 1
}

uid=$(id -u)

# Chromium's sandbox. As root Chromium refuses it; as an unprivileged user it needs user namespaces (the image
# leaves out Debian's setuid helper, chromium-sandbox, which no-new-privileges would disable anyway). The probe does
# what Chromium's namespace sandbox does: a new user, PID and network namespace, with its uid mapped.
sandbox=${FRAMESTREAM_CHROME_SANDBOX:-auto}
case $sandbox in
    auto | on | off) ;;
    *) die "FRAMESTREAM_CHROME_SANDBOX=$sandbox: expected auto, on or off" ;;
esac
export FRAMESTREAM_CHROME_SANDBOX="$sandbox"
if [ "$sandbox" = off ]; then
    log "WARNING: Chromium sandbox: OFF (FRAMESTREAM_CHROME_SANDBOX=off): a compromised page renderer gets uid $uid's access to this container"
elif [ "$uid" = 0 ]; then
    die "running as root: Chromium cannot use its sandbox as root. Run as an unprivileged user (the image's default is uid 1000), or set FRAMESTREAM_CHROME_SANDBOX=off to accept running without it"
elif ! command -v unshare >/dev/null 2>&1; then
    die "cannot check for user namespaces: unshare (util-linux) is missing"
elif unshare --user --map-root-user --pid --net --fork true 2>/dev/null; then
    log "Chromium sandbox: on (uid $uid, user namespaces available)"
else
    die "Chromium sandbox: unavailable: uid $uid cannot create user namespaces (blocked by a seccomp profile such as Docker's or the runtime default, by AppArmor, or by the user.max_user_namespaces sysctl). Allow them (see sandbox-image/README.md), or set FRAMESTREAM_CHROME_SANDBOX=off to run Chromium without its sandbox (weaker)"
fi

# HOME: Chromium and fontconfig write below it (~/.pki, ~/.cache). With a read-only root file system the image's
# home is read-only, so use one under the temporary directory instead.
tmp=${TMPDIR:-/tmp}
[ -d "$tmp" ] && [ -w "$tmp" ] || die "$tmp is not writable: mount a tmpfs or emptyDir there (Chromium and Xvfb need it)"
if [ -z "${HOME:-}" ] || [ ! -d "$HOME" ] || [ ! -w "$HOME" ]; then
    new_home="$tmp/framestream-home"
    mkdir -p "$new_home"
    chmod 0700 "$new_home"
    log "HOME ${HOME:-(unset)} is not writable (read-only root file system?): using $new_home"
    HOME=$new_home
    export HOME
fi

# The state dir holds every frame's profile (cookies, storage) and the frame registry: it must be writable,
# and it should be a volume so profiles survive a restart.
state=${FRAMESTREAM_STATE_DIR:-$HOME/.local/state/framestream}
mkdir -p "$state" 2>/dev/null || die "cannot create the state dir $state as uid $uid: mount a volume there that uid $uid can write"
[ -w "$state" ] || die "the state dir $state is not writable by uid $uid: fix the volume's owner (Kubernetes: fsGroup)"
FRAMESTREAM_STATE_DIR=$state
export FRAMESTREAM_STATE_DIR
log "uid $uid, state dir $state"

command -v framestream >/dev/null 2>&1 || die "framestream is not on PATH ($PATH)"
exec framestream serve --host "${FRAMESTREAM_HOST:-0.0.0.0}" --port "${FRAMESTREAM_PORT:-7682}" "$@"
