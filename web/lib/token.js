// Reading a token's claims in the browser (PROTOCOL.md: base64url(claims_json) "." base64url(mac)).
// The viewer cannot verify the signature (it has no secret) and does not need to: the server does. The claims
// only steer the UI (view-only badge, driving UI). Pure: works in node (atob is global there too).

export function base64UrlDecode(text) {
  const b64 = text.replace(/-/g, '+').replace(/_/g, '/');
  const padded = b64 + '='.repeat((4 - (b64.length % 4)) % 4);
  const binary = atob(padded);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i += 1) bytes[i] = binary.charCodeAt(i);
  return new TextDecoder().decode(bytes);
}

/** The claims object of a token, or null when it cannot be read. */
export function decodeClaims(token) {
  if (typeof token !== 'string' || !token.includes('.')) return null;
  try {
    const claims = JSON.parse(base64UrlDecode(token.split('.')[0]));
    return claims && typeof claims === 'object' && !Array.isArray(claims) ? claims : null;
  } catch {
    return null;
  }
}

/** 'view' | 'drive' | 'control' | null */
export function roleOf(token) {
  const role = decodeClaims(token)?.role;
  return role === 'view' || role === 'drive' || role === 'control' ? role : null;
}

/** Whether a token with this role may send input (drive; control is the operator's, not a drive grant). */
export function canDrive(role) {
  return role === 'drive';
}

/** Seconds until the token expires (negative when expired), or null. `nowS` is unix seconds. */
export function secondsLeft(token, nowS) {
  const exp = decodeClaims(token)?.exp;
  return typeof exp === 'number' ? exp - nowS : null;
}
