/**
 * Redaction by the shape of a value: credentials inside free text (scripts, URLs, header
 * lines, error messages), whatever key holds the text. Key names are judged by `isSecretName`;
 * values by the patterns below. Over-matching is accepted: a stored row loses a harmless
 * word rather than keep a secret.
 */

/** What replaces a secret. */
export const REDACTED = '[REDACTED]';

/**
 * Whole-word names of secrets, matched anywhere in a key and case-insensitively, so
 * `accessToken`, `X-Api-Key`, `client_secret` and `Set-Cookie` all count.
 */
const SECRET_WORD =
  /token|secret|passw(?:or)?d|passphrase|authori[sz]ation|authentication|api[_-]?key|access[_-]?key|private[_-]?key|cookie|credential|signature/i;

/** Segments of a name that make it secret on their own: `GH_PAT`, `X-Auth-Key`, `OPENAI_KEY`. */
const SECRET_SEGMENTS = new Set(['auth', 'pass', 'pwd', 'pat', 'sig', 'dsn']);

/** A name can hold one of {@link SECRET_SEGMENTS} or `key` only if it holds its letters. */
const SEGMENT_HINT = /auth|pass|pwd|pat|sig|dsn|key/i;

/** Splits `X-Auth-Key`, `OPENAI_KEY`, `subscriptionKey` into lower-case words. */
function segments(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((s) => s.length > 0);
}

/**
 * True when a key (property, header, environment variable or query parameter name) names a
 * secret. `key` counts as a segment of a longer name (`OPENAI_KEY`, `Ocp-Apim-Subscription-Key`)
 * but not alone (`key: "Enter"` of a terminal); `auth`, `pass`, `pwd`, `pat` count as whole
 * segments (`X-Auth-Key`, `GH_PAT`), never inside a word (`author`, `path`).
 */
export function isSecretName(name: string): boolean {
  if (SECRET_WORD.test(name)) return true;
  // each segment below is in the name itself: without one of them, no split can find it (and
  // most names a scan of a script meets have none; splitting them all cost ~0.5 µs a name)
  if (!SEGMENT_HINT.test(name)) return false;
  const parts = segments(name);
  if (parts.some((p) => SECRET_SEGMENTS.has(p))) return true;
  return parts.length > 1 && parts.includes('key');
}

/** Tokens recognisable by their prefix or form alone. */
const TOKEN_PATTERNS: RegExp[] = [
  // PEM private keys, also when the end line was cut off
  /-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(?:-----END[A-Z0-9 ]*PRIVATE KEY-----|$)/g,
  // JSON Web Tokens: header.payload.signature, base64url
  /\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}/g,
  // OpenAI, Anthropic (sk-, sk-proj-, sk-ant-), Stripe (sk_live_, rk_test_)
  /\b(?:sk|rk)[-_][A-Za-z0-9_-]{16,}/g,
  // GitHub classic and fine-grained tokens
  /\bgh[pousr]_[A-Za-z0-9]{20,}/g,
  /\bgithub_pat_[A-Za-z0-9_]{20,}/g,
  // GitLab
  /\bglpat-[A-Za-z0-9_-]{16,}/g,
  // Slack
  /\bxox[abposr]-[A-Za-z0-9-]{10,}/g,
  // AWS access key ids
  /\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[A-Z0-9]{16}\b/g,
  // Google API keys, npm, Hugging Face
  /\bAIza[0-9A-Za-z_-]{30,}/g,
  /\bnpm_[A-Za-z0-9]{30,}/g,
  /\bhf_[A-Za-z0-9]{30,}/g,
];

/**
 * `scheme://user:password@host` and `scheme://token@host`: the whole userinfo. Lengths are
 * bounded and a scheme starts only where no scheme character precedes it, so text that repeats
 * scheme-like characters is scanned in linear time.
 */
// The userinfo runs to the last "@" before the host, so a password holding "@" is taken whole.
const URL_USERINFO = /(?<![a-z0-9+.-])([a-z][a-z0-9+.-]{0,31}:\/\/)[^\s/?#"'<>]{1,512}@/gi;

/**
 * `scheme://user:pa/ss@host`: a password holding "/", which ends {@link URL_USERINFO}'s run. Taken
 * only when what follows "@" looks like a host, and not after a port (`http://h:8080/@scope/pkg`).
 */
const URL_USERINFO_SLASH =
  /(?<![a-z0-9+.-])([a-z][a-z0-9+.-]{0,31}:\/\/)[^\s/?#@:"'<>]{1,256}:(?!\d*\/)[^\s?#"'<>]{1,512}?@(?=[a-z0-9.-]+(?:[:/?#\s"'<>]|$))/gi;

/** `Bearer abc…`, `Basic dXNl…`, `token abc…` (an Authorization value anywhere in text). */
const AUTH_SCHEME = /\b(Bearer|bearer|BEARER|Basic|Digest|Token|Bot|Negotiate)(\s+)[A-Za-z0-9._~+/=-]{6,}/g;

/**
 * `authorization: <scheme> <credential>` in any case (`authorization: bearer …`, `Proxy-Authorization:
 * basic …`, a scheme no list knows): the credential after the scheme word.
 */
const AUTH_HEADER =
  /\b((?:proxy-)?authori[sz]ation)(["']?[ \t]*[:=][ \t]*["']?)([A-Za-z][A-Za-z0-9_-]{0,31})([ \t]+)(?!\[REDACTED\])[^\s"',;]+/gi;

/** Whether {@link AUTH_HEADER} can match at all. */
const AUTH_HINT = /authori[sz]ation/i;

/** A scheme word whose token {@link AUTH_SCHEME} or {@link AUTH_HEADER} already redacted. */
const AUTH_SCHEME_WORD = /^(?:Bearer|Basic|Digest|Token|Bot|Negotiate)$/i;

/** `curl -u user:password`, `--user=user:password`, `-uuser:password`: the password. */
const USER_OPTION =
  /(?<![\w-])(-u|--user|--proxy-user)(=|[ \t]+|)(["']?)([^\s:"'-][^\s:"']{0,255}):(?!\[REDACTED\])[^\s"']+/g;

/**
 * An option whose name is secret and whose value follows after a space (`--password VALUE`,
 * `--api-key VALUE`, `-token VALUE`): the value (a following option is not one).
 */
// Only names holding the letters of a secret word are taken at all (most options are not), and
// `isSecretName` judges those.
const SECRET_OPTION =
  /(?<![\w-])(--?(?=[\w-]{0,60}?(?:pass|pwd|token|secret|key|auth|cred|cookie|sig|pat|dsn))[A-Za-z][\w-]{0,63})([ \t]+)(["']?)([^\s"'-][^\s"']*)/gi;

/** Whether {@link SECRET_OPTION} can match at all (a text without these letters is not scanned per "-"). */
const OPTION_HINT = /pass|pwd|token|secret|key|auth|cred|cookie|sig|pat|dsn/i;

/**
 * `-p` of the programs where it is the password (the MySQL and MariaDB clients, sshpass):
 * `mysql -u root -pSECRET`, `sshpass -p SECRET ssh host`, up to the end of the command.
 */
const PASSWORD_P =
  /(\b(?:mysql[\w-]*|mariadb[\w-]*|sshpass)\b[^\n;|&]{0,512}?[ \t])-p([ \t]*)(["']?)(?!\[REDACTED\])([^\s"']+)/g;

/** Whether {@link PASSWORD_P} can match at all. */
const PASSWORD_P_HINT = /mysql|mariadb|sshpass/;

/** Programs whose `-p` takes the password, by base name (for argv arrays). */
export const PASSWORD_P_PROGRAM = /^(?:mysql[\w-]*|mariadb[\w-]*|sshpass)$/;

/**
 * `name=value` and `name: value` pairs (query strings, form bodies, env assignments, header
 * lines, `--password=…` flags): the value is redacted when the name is secret.
 */
// A name starts where no letter, digit or _ precedes it (so `--password=` counts) and is at most
// 128 characters long: a long run of name characters (a 64 KiB file of "x") is scanned in linear
// time, not once per position to its end. The name is taken whole, never given back (an atomic
// group: `(?=(…))\1`): a shorter name would be followed by a name character, which cannot start
// the separator, so backtracking into it could never match. The matches are the same as without
// it, and base64 text is scanned about 1.6 times faster.
export const NAMED_VALUE =
  /(?<![A-Za-z0-9_])(?=([A-Za-z_][A-Za-z0-9_.-]{0,127}))\1(["']?\s*(?:=|:(?!\/\/))\s*["']?)([^\s"'&;,)}\]]+)/g;

/**
 * A copy of `text` with every credential recognisable by its shape replaced by {@link REDACTED}.
 * A string holding a JSON object or array is parsed, redacted as data and serialised again.
 */
export function redactText(text: string, redactJson: (value: unknown) => unknown): string {
  const trimmed = text.trim();
  if (
    (trimmed.startsWith('{') && trimmed.endsWith('}')) ||
    (trimmed.startsWith('[') && trimmed.endsWith(']'))
  ) {
    try {
      const parsed: unknown = JSON.parse(trimmed);
      const redacted = JSON.stringify(redactJson(parsed));
      return redacted === JSON.stringify(parsed) ? text : redacted;
    } catch {
      // not JSON after all: treat it as text
    }
  }
  let out = text;
  for (const pattern of TOKEN_PATTERNS) out = out.replace(pattern, REDACTED);
  // The two costliest scans (0.15-0.5 ms on 64 KiB) are skipped where they cannot match: a
  // userinfo needs "://" and "@", a named value "=" or ":" (a plain substring search is ~100 times
  // faster).
  if (out.includes('://') && out.includes('@')) {
    out = out.replace(URL_USERINFO, `$1${REDACTED}@`);
    out = out.replace(URL_USERINFO_SLASH, `$1${REDACTED}@`);
  }
  // the shapes below are skipped by a plain search where their fixed letters are missing
  if (AUTH_HINT.test(out)) out = out.replace(AUTH_HEADER, `$1$2$3$4${REDACTED}`);
  out = out.replace(AUTH_SCHEME, `$1$2${REDACTED}`);
  if (out.includes('-')) {
    // a letter first: searching "-u" in a long run of "-" costs as much as the scan itself
    if (out.includes('u') && out.includes('-u')) out = out.replace(USER_OPTION, `$1$2$3$4:${REDACTED}`);
    if (OPTION_HINT.test(out)) {
      out = out.replace(
        SECRET_OPTION,
        (whole, option: string, space: string, quote: string, value: string) =>
          value !== REDACTED && isSecretName(option.replace(/^-+/, ''))
            ? `${option}${space}${quote}${REDACTED}`
            : whole,
      );
    }
    if (PASSWORD_P_HINT.test(out)) out = out.replace(PASSWORD_P, `$1-p$2$3${REDACTED}`);
  }
  if (out.includes('=') || out.includes(':')) {
    // an authorization's scheme word whose credential was redacted after it (`SSWS [REDACTED]`) stays
    const schemeOf = (end: number, text: string) =>
      text.startsWith(` ${REDACTED}`, end) || text.startsWith(`\t${REDACTED}`, end);
    out = out.replace(
      NAMED_VALUE,
      (whole, name: string, sep: string, value: string, at: number, text: string) =>
        isSecretName(name) &&
        value !== REDACTED &&
        !AUTH_SCHEME_WORD.test(value) &&
        !(AUTH_HINT.test(name) && schemeOf(at + whole.length, text))
          ? `${name}${sep}${REDACTED}`
          : whole,
    );
  }
  return out;
}
