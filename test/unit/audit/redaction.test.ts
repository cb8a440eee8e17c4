import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  isSecretKey,
  MAX_INPUT_BYTES,
  REDACTED,
  redactSecrets,
  serializeInput,
} from '../../../src/shared/redact.js';
import { isSecretName, NAMED_VALUE } from '../../../src/shared/redact-text.js';
import { truncateUtf8 } from '../../../src/shared/text.js';

describe('redactSecrets', () => {
  it('redacts secret-named keys whatever their case or separator', () => {
    const keys = [
      'token',
      'accessToken',
      'GITHUB_TOKEN',
      'secret',
      'client_secret',
      'password',
      'Password',
      'passwd',
      'authorization',
      'api_key',
      'apikey',
      'api-key',
      'X-Api-Key',
      'apiKey',
      'access_key',
      'AWS_ACCESS_KEY_ID',
      'private_key',
      'privateKey',
      'cookie',
      'Set-Cookie',
      'credential',
      'credentials',
      'auth',
      'pwd',
    ];
    const input = Object.fromEntries(keys.map((k) => [k, `value-of-${k}`]));
    assert.deepEqual(redactSecrets(input), Object.fromEntries(keys.map((k) => [k, REDACTED])));
  });

  it('keeps ordinary keys and their values as they are', () => {
    const input = { path: '/ws/a.txt', author: 'ada', count: 3, ok: true, none: null, list: [1, 'two'] };
    assert.deepEqual(redactSecrets(input), input);
    for (const key of ['path', 'author', 'authority', 'name', 'url', 'description', 'passage']) {
      assert.equal(isSecretKey(key), false, key);
    }
  });

  it('redacts inside nested objects and arrays of objects', () => {
    const input = {
      request: { url: 'https://api.example.com', auth: { user: 'u', password: 'p' } },
      accounts: [
        { id: 1, apiKey: 'k1' },
        { id: 2, nested: [{ refresh_token: 't2' }] },
      ],
    };
    assert.deepEqual(redactSecrets(input), {
      request: { url: 'https://api.example.com', auth: REDACTED },
      accounts: [
        { id: 1, apiKey: REDACTED },
        { id: 2, nested: [{ refresh_token: REDACTED }] },
      ],
    });
  });

  it('redacts a whole object or array held under a secret key', () => {
    const input = { credentials: { user: 'u', pass: 'p' }, tokens: ['a', 'b'] };
    assert.deepEqual(redactSecrets(input), { credentials: REDACTED, tokens: REDACTED });
  });

  it('redacts Authorization in headers given as an object, as pairs or as name/value entries', () => {
    const input = {
      headers: { Authorization: 'Bearer abc', Accept: 'application/json' },
      rawHeaders: [
        ['authorization', 'Basic xyz'],
        ['Accept', 'text/plain'],
      ],
      harHeaders: [
        { name: 'Cookie', value: 'sid=1' },
        { name: 'Accept', value: '*/*' },
        { key: 'X-Api-Key', value: 'k' },
      ],
    };
    assert.deepEqual(redactSecrets(input), {
      headers: { Authorization: REDACTED, Accept: 'application/json' },
      rawHeaders: [
        ['authorization', REDACTED],
        ['Accept', 'text/plain'],
      ],
      harHeaders: [
        { name: 'Cookie', value: REDACTED },
        { name: 'Accept', value: '*/*' },
        { key: 'X-Api-Key', value: REDACTED },
      ],
    });
  });

  it('leaves the caller’s object untouched', () => {
    const input = { headers: { Authorization: 'Bearer abc' } };
    redactSecrets(input);
    assert.equal(input.headers.Authorization, 'Bearer abc');
  });

  it('serialises cycles, bigints, dates, functions and very deep nesting without throwing', () => {
    const cyclic: Record<string, unknown> = { name: 'loop' };
    cyclic.self = cyclic;
    let deep: unknown = 'bottom';
    for (let i = 0; i < 10_000; i++) deep = { next: deep };
    const input = { cyclic, big: 10n, at: new Date(0), fn: () => 1, deep };
    const text = serializeInput(input, 1_000_000);
    const parsed = JSON.parse(text) as Record<string, unknown>;
    assert.deepEqual(parsed.cyclic, { name: 'loop', self: '[Circular]' });
    assert.equal(parsed.big, '10');
    assert.equal(parsed.at, '1970-01-01T00:00:00.000Z');
    assert.equal('fn' in parsed, false);
    assert.match(text, /\[Too deep\]/);
  });

  it('stores the same object twice when it is shared but not cyclic', () => {
    const shared = { a: 1 };
    assert.deepEqual(redactSecrets({ x: shared, y: shared }), { x: { a: 1 }, y: { a: 1 } });
  });
});

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

describe('serializeInput and truncateUtf8', () => {
  it('keeps an input under 4 KiB as parseable JSON', () => {
    const input = { path: '/ws/a.txt', content: 'x'.repeat(3000) };
    assert.deepEqual(JSON.parse(serializeInput(input)), input);
  });

  it('cuts an input over 4 KiB to 4 KiB with a marker giving the dropped byte count', () => {
    const input = { content: 'y'.repeat(10_000) };
    const full = JSON.stringify(input);
    const text = serializeInput(input);
    assert.ok(Buffer.byteLength(text) <= MAX_INPUT_BYTES);
    assert.ok(Buffer.byteLength(text) > MAX_INPUT_BYTES - 40, 'uses nearly all of the budget');
    const match = /…\[truncated (\d+) bytes\]$/.exec(text);
    assert.ok(match, text.slice(-60));
    const prefix = text.slice(0, match.index);
    assert.ok(full.startsWith(prefix));
    assert.equal(Buffer.byteLength(prefix) + Number(match[1]), Buffer.byteLength(full));
  });

  it('redacts before truncating, so a secret past the cut is never stored either', () => {
    const text = serializeInput({ filler: 'z'.repeat(5000), password: 'hunter2' });
    assert.ok(!text.includes('hunter2'));
    const short = serializeInput({ password: 'hunter2' });
    assert.equal(short, JSON.stringify({ password: REDACTED }));
  });

  it('never splits a multi-byte character, wherever the cut falls', () => {
    // 2-, 3- and 4-byte characters (é, 語, 🦄) shifted across every cut position.
    for (const char of ['é', '語', '🦄']) {
      for (let shift = 0; shift < 4; shift++) {
        const text = `${'a'.repeat(shift)}${char.repeat(3000)}`;
        const out = truncateUtf8(text, 4096);
        assert.ok(Buffer.byteLength(out) <= 4096);
        assert.ok(!LONE_SURROGATE.test(out), `lone surrogate with ${char} shift ${shift}`);
        const bytes = Buffer.from(out, 'utf8');
        assert.doesNotThrow(() => new TextDecoder('utf-8', { fatal: true }).decode(bytes));
        const prefix = out.slice(0, out.indexOf('…[truncated'));
        assert.ok(text.startsWith(prefix), `prefix differs with ${char} shift ${shift}`);
        assert.ok(!prefix.includes('\uFFFD'));
        const dropped = Number(/(\d+) bytes\]$/.exec(out)?.[1]);
        assert.equal(Buffer.byteLength(prefix) + dropped, Buffer.byteLength(text));
      }
    }
  });

  it('returns text that fits unchanged, even when it is exactly the limit', () => {
    const exact = 'é'.repeat(2048);
    assert.equal(truncateUtf8(exact, 4096), exact);
    assert.notEqual(truncateUtf8(`${exact}a`, 4096), `${exact}a`);
  });
});

describe('redaction by the shape of a value', () => {
  it('treats env and header names that say KEY, TOKEN, SECRET, PASSWORD, PAT or AUTH as secret, and a lone key as not', () => {
    for (const name of [
      'OPENAI_KEY',
      'GH_PAT',
      'SERVICE_AUTH',
      'Authentication',
      'X-Auth-Key',
      'Ocp-Apim-Subscription-Key',
      'DB_PASSWORD',
      'signature',
    ]) {
      assert.equal(isSecretKey(name), true, name);
    }
    for (const name of ['key', 'path', 'author', 'authority', 'patch', 'compat', 'passage', 'keyboard']) {
      assert.equal(isSecretKey(name), false, name);
    }
  });

  it('redacts URL credentials, bearer values and secret name=value pairs inside text', () => {
    const out = redactSecrets({
      script: [
        'curl -H "Authorization: Bearer abcdef123456" https://u:pw123@h.example/p?api_key=k1&page=2',
        'export DB_PASSWORD=s3cr3t',
      ].join('\n'),
    }) as { script: string };
    assert.equal(
      out.script,
      [
        `curl -H "Authorization: Bearer ${REDACTED}" https://${REDACTED}@h.example/p?api_key=${REDACTED}&page=2`,
        `export DB_PASSWORD=${REDACTED}`,
      ].join('\n'),
    );
  });

  it('parses a JSON string body, redacts it as data and leaves a body without secrets as it was', () => {
    const body = '{ "user": "ada", "password": "x" }';
    assert.deepEqual(JSON.parse((redactSecrets({ body }) as { body: string }).body), {
      user: 'ada',
      password: REDACTED,
    });
    const plain = '{ "user": "ada" }';
    assert.equal((redactSecrets({ body: plain }) as { body: string }).body, plain);
  });
});

/** A seeded pseudo-random source: a failure names an input that the same seed replays. */
function seeded(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1103515245 + 12345) & 0x7fffffff;
    return state;
  };
}

/** `count` pieces picked by `next`, joined. */
function joinPieces(pieces: string[], count: number, next: () => number): string {
  let out = '';
  for (let j = 0; j < count; j++) out += pieces[next() % pieces.length];
  return out;
}

describe('the name=value scan', () => {
  // the scan as it was before its name became atomic: the reference the faster form must equal
  const BACKTRACKING =
    /(?<![A-Za-z0-9_])([A-Za-z_][A-Za-z0-9_.-]{0,127})(["']?\s*(?:=|:(?!\/\/))\s*["']?)([^\s"'&;,)}\]]+)/g;
  const matches = (re: RegExp, text: string) => [...text.matchAll(re)].map((m) => [m.index, ...m]);

  it('finds exactly the matches of the backtracking form, on 20,000 random texts built to confuse it', () => {
    const pieces = [
      'a',
      'Z',
      '_',
      '9',
      '.',
      '-',
      '=',
      ':',
      '://',
      '/',
      '"',
      "'",
      ' ',
      '\t',
      '\n',
      '&',
      ';',
      ',',
      ')',
      '}',
      ']',
      'password',
      'token',
      'key',
      'auth',
      'path',
      'x'.repeat(130),
      'A1b2_',
      '==',
      ': ',
    ];
    const next = seeded(0x5eed);
    for (let i = 0; i < 20_000; i++) {
      const text = joinPieces(pieces, 1 + (next() % 24), next);
      assert.deepEqual(matches(NAMED_VALUE, text), matches(BACKTRACKING, text), JSON.stringify(text));
    }
  });

  it('still takes a name of 128 characters and no longer one', () => {
    const at128 = `${'n'.repeat(128)}=v`;
    const at129 = `${'n'.repeat(129)}=v`;
    assert.deepEqual(matches(NAMED_VALUE, at128), matches(BACKTRACKING, at128));
    assert.equal(matches(NAMED_VALUE, at128).length, 1);
    assert.deepEqual(matches(NAMED_VALUE, at129), matches(BACKTRACKING, at129));
  });
});

describe('isSecretName', () => {
  // the judgement as it was before its quick rejection: the reference the faster one must equal
  const SECRET_WORD =
    /token|secret|passw(?:or)?d|passphrase|authori[sz]ation|authentication|api[_-]?key|access[_-]?key|private[_-]?key|cookie|credential|signature/i;
  const SEGMENTS = new Set(['auth', 'pass', 'pwd', 'pat', 'sig', 'dsn']);
  const reference = (name: string) => {
    if (SECRET_WORD.test(name)) return true;
    const parts = name
      .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
      .toLowerCase()
      .split(/[^a-z0-9]+/)
      .filter((p) => p.length > 0);
    if (parts.some((p) => SEGMENTS.has(p))) return true;
    return parts.length > 1 && parts.includes('key');
  };

  it('judges 20,000 random names exactly as the full split does', () => {
    const pieces = [
      'auth',
      'Auth',
      'AUTH',
      'pass',
      'Pwd',
      'pat',
      'Path',
      'PAT',
      'sig',
      'Sig',
      'dsn',
      'key',
      'Key',
      'KEY',
      'token',
      'Author',
      'x',
      'A',
      'b',
      '9',
      '_',
      '-',
      '.',
      'OPENAI',
      'GH',
      'subscription',
      'api',
    ];
    const next = seeded(0xca11);
    let secret = 0;
    for (let i = 0; i < 20_000; i++) {
      const name = joinPieces(pieces, 1 + (next() % 5), next);
      const expected = reference(name);
      if (expected) secret++;
      assert.equal(isSecretName(name), expected, name);
    }
    // both answers were exercised
    assert.ok(secret > 1000 && secret < 19_000, `${secret} secret names`);
  });
});

describe('credential shapes in commands and headers', () => {
  const S = 'hunter2xyz';
  const R = REDACTED;
  const text = (t: string) => (redactSecrets({ t }) as { t: string }).t;

  it('redacts the credential after any authorization scheme, in any case', () => {
    assert.equal(text(`curl -H "authorization: bearer ${S}" x`), `curl -H "authorization: bearer ${R}" x`);
    assert.equal(text(`AUTHORIZATION: BEARER ${S}`), `AUTHORIZATION: BEARER ${R}`);
    assert.equal(text(`proxy-authorization: basic ${S}`), `proxy-authorization: basic ${R}`);
    assert.equal(text(`Authorization: SSWS ${S}`), `Authorization: SSWS ${R}`);
    assert.equal(text(`echo bearer ${S}`), `echo bearer ${R}`);
  });

  it('redacts the password of curl -u / --user, and the value of a secret option after a space', () => {
    assert.equal(text(`curl -u ada:${S} x`), `curl -u ada:${R} x`);
    assert.equal(text(`curl -uada:${S} x`), `curl -uada:${R} x`);
    assert.equal(text(`curl --user 'ada:${S}' x`), `curl --user 'ada:${R}' x`);
    assert.equal(text(`curl --proxy-user=ada:${S} x`), `curl --proxy-user=ada:${R} x`);
    assert.equal(text(`wget --password ${S} x`), `wget --password ${R} x`);
    assert.equal(
      text(`tool --api-key "${S}" --client-secret ${S}`),
      `tool --api-key "${R}" --client-secret ${R}`,
    );
    assert.equal(text(`keytool -storepassword ${S}`), `keytool -storepassword ${R}`);
    // an option that is not secret, or a secret option followed by another option, keeps its text
    assert.equal(text('git push -u origin main:main'), 'git push -u origin main:main');
    assert.equal(text('ls --color always; sort -u f'), 'ls --color always; sort -u f');
    assert.equal(text('docker login --password-stdin -u ada'), 'docker login --password-stdin -u ada');
  });

  it('redacts -p where it is the password: the MySQL and MariaDB clients and sshpass', () => {
    assert.equal(text(`mysql -u root -p${S} app`), `mysql -u root -p${R} app`);
    assert.equal(text(`mysqldump -h db -p ${S} app`), `mysqldump -h db -p ${R} app`);
    assert.equal(text(`mariadb -p'${S}'`), `mariadb -p'${R}'`);
    assert.equal(text(`sshpass -p ${S} ssh host`), `sshpass -p ${R} ssh host`);
    assert.equal(text(`sshpass -p${S} ssh host`), `sshpass -p${R} ssh host`);
    // elsewhere -p is not a password, and -P is MySQL's port
    assert.equal(
      text('mkdir -p /w/x; mysql -P 3306 -e "select 1"'),
      'mkdir -p /w/x; mysql -P 3306 -e "select 1"',
    );
  });

  it('redacts URL credentials whose password holds "@" or "/", and keeps URLs with "@" in their path', () => {
    assert.equal(text(`https://ada:${S}@host/x`), `https://${R}@host/x`);
    assert.equal(
      text(`git clone https://ada:p@ss${S}@git.example.com/r`),
      `git clone https://${R}@git.example.com/r`,
    );
    assert.equal(text(`psql postgresql://ada:pa/ss${S}@db:5432/app`), `psql postgresql://${R}@db:5432/app`);
    assert.equal(
      text(`psql "postgres://db/app?user=ada&password=${S}"`),
      `psql "postgres://db/app?user=ada&password=${R}"`,
    );
    for (const url of [
      'https://registry.npmjs.org/@types/node',
      'http://localhost:3000/@ada/x',
      'https://h/a:b@c',
    ])
      assert.equal(text(url), url);
  });

  it('reads an array of strings as an argv: the credential is the argument after its option', () => {
    assert.deepEqual(redactSecrets(['curl', '-u', `ada:${S}`, 'https://x']), [
      'curl',
      '-u',
      `ada:${R}`,
      'https://x',
    ]);
    assert.deepEqual(redactSecrets(['wget', '--password', S, 'x']), ['wget', '--password', R, 'x']);
    assert.deepEqual(redactSecrets(['/usr/bin/sshpass', '-p', S, 'ssh', 'h']), [
      '/usr/bin/sshpass',
      '-p',
      R,
      'ssh',
      'h',
    ]);
    assert.deepEqual(redactSecrets(['mysql', `-p${S}`, 'app']), ['mysql', `-p${R}`, 'app']);
    assert.deepEqual(redactSecrets(['curl', '-H', `authorization: bearer ${S}`]), [
      'curl',
      '-H',
      `authorization: bearer ${R}`,
    ]);
    // -p of another program, and a list that is no argv, stay as they are
    assert.deepEqual(redactSecrets(['mkdir', '-p', '/w/x']), ['mkdir', '-p', '/w/x']);
    assert.deepEqual(redactSecrets(['/workspace', '/tmp']), ['/workspace', '/tmp']);
  });
});

describe('credential shapes among other arguments', () => {
  it('never keeps the secret of a shape, wherever it stands among 5,000 seeded commands, and keeps the plain arguments around it', () => {
    const shapes = [
      (s: string) => `curl -u ada:${s}`,
      (s: string) => `curl --user=ada:${s}`,
      (s: string) => `wget --password ${s}`,
      (s: string) => `tool --api-key '${s}'`,
      (s: string) => `mysql -p${s}`,
      (s: string) => `mysqldump -p ${s}`,
      (s: string) => `sshpass -p "${s}" ssh`,
      (s: string) => `curl -H 'authorization: bearer ${s}'`,
      (s: string) => `git clone https://ada:${s}@h.example/r`,
    ];
    const plain = [
      '-v',
      '--color',
      'always',
      '-h',
      'db.example',
      '-P',
      '3306',
      '/w/x',
      'main:main',
      '-e',
      'select',
    ];
    const next = seeded(0xc0de);
    for (let i = 0; i < 5000; i++) {
      const secret = `Zq${(next() % 1e9).toString(36)}x${next() % 97}`;
      const before = joinPieces(
        plain.map((p) => ` ${p}`),
        next() % 4,
        next,
      );
      const after = joinPieces(
        plain.map((p) => ` ${p}`),
        next() % 4,
        next,
      );
      const command = `${shapes[next() % shapes.length]!(secret)}${after}`;
      const line = next() % 2 === 0 ? `cd /w &&${before} ; ${command}` : command;
      const out = (redactSecrets({ line }) as { line: string }).line;
      assert.ok(!out.includes(secret), `${line}\n→ ${out}`);
      assert.ok(out.endsWith(after), `${line}\n→ ${out}`);
    }
  });
});
