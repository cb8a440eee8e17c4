/** The outcome of expanding one string: the text, or the problems found in it. */
export type ExpansionResult = { ok: true; value: string } | { ok: false; problems: string[] };

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Expands `${VAR}` and `${VAR:-default}` the way Claude Code does in `.mcp.json`:
 * `${VAR}` is the variable's value (an unset variable is a problem, an empty one is
 * kept); `${VAR:-default}` uses `default` when the variable is unset or empty. A `$`
 * not followed by `{` is literal. Problems name the variable; the caller adds where.
 */
export function expandVars(text: string, env: NodeJS.ProcessEnv): ExpansionResult {
  if (!text.includes('${')) return { ok: true, value: text };
  const problems: string[] = [];
  let out = '';
  let i = 0;
  while (i < text.length) {
    const start = text.indexOf('${', i);
    if (start === -1) {
      out += text.slice(i);
      break;
    }
    out += text.slice(i, start);
    const end = text.indexOf('}', start + 2);
    if (end === -1) {
      problems.push(`unterminated "\${" at character ${start + 1}; close it with "}"`);
      break;
    }
    const body = text.slice(start + 2, end);
    const sep = body.indexOf(':-');
    const name = sep === -1 ? body : body.slice(0, sep);
    if (!NAME.test(name)) {
      problems.push(`"\${${body}}" is not a variable reference; write \${NAME} or \${NAME:-default}`);
    } else {
      const value = env[name];
      if (sep !== -1) {
        out += value === undefined || value === '' ? body.slice(sep + 2) : value;
      } else if (value === undefined) {
        problems.push(
          `variable ${name} is not set; set it in Paddock's environment or give a default with \${${name}:-default}`,
        );
      } else {
        out += value;
      }
    }
    i = end + 1;
  }
  return problems.length > 0 ? { ok: false, problems } : { ok: true, value: out };
}
