/**
 * The guest's fixed layout, the same for every backend: where the workspace is, which account
 * runs jobs, the PATH, and where Paddock's own read-only files appear.
 */

/** Where Paddock's own read-only files appear in the guest. */
export const GUEST_OPT = '/opt/paddock';
/** The node binary the agent runs with. */
export const GUEST_NODE = `${GUEST_OPT}/bin/node`;
/** The launcher that gives each job and terminal a Landlock domain of its own (see backend/scope-program.ts). */
export const GUEST_SCOPE_PROGRAM = `${GUEST_OPT}/bin/paddock-scope`;
/** The program that forks the spare shells, so the agent never forks for them (see backend/spawner-program.ts). */
export const GUEST_SPAWNER_PROGRAM = `${GUEST_OPT}/bin/paddock-spawner`;
/** The compiled guest agent directory. */
export const GUEST_AGENT_DIR = `${GUEST_OPT}/guest`;
/** Where the tool-channel clients appear (read-only). */
export const GUEST_CLIENT_DIRS = {
  cli: `${GUEST_OPT}/cli`,
  node: `${GUEST_OPT}/node`,
  python: `${GUEST_OPT}/python`,
} as const;
/** The fixed PATH of the guest account (never a writable directory). */
export const GUEST_PATH = `/usr/local/bin:/usr/bin:/bin:${GUEST_OPT}/bin:${GUEST_CLIENT_DIRS.cli}`;
/** The fixed PATH of root on an image (`user: root`): the system's sbin directories too. */
export const ROOT_PATH = `/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:${GUEST_OPT}/bin:${GUEST_CLIENT_DIRS.cli}`;
/** The workspace, the guest account's home. */
export const GUEST_WORKSPACE = '/workspace';
/** The guest account. */
export const GUEST_UID = 1000;
export const GUEST_USER = 'agent';

/** The environment every job starts from (the profile's and the caller's variables go on top). */
export function baseJobEnv(shell: string): Record<string, string> {
  return {
    HOME: GUEST_WORKSPACE,
    USER: GUEST_USER,
    LOGNAME: GUEST_USER,
    SHELL: shell,
    PATH: GUEST_PATH,
    LANG: 'C.UTF-8',
    TMPDIR: '/tmp',
    PYTHONPATH: GUEST_CLIENT_DIRS.python,
  };
}

/** Where the computer's resolver listens (UDP and TCP 53 on lo; /etc/resolv.conf names it). */
export const GUEST_RESOLVER = '127.0.0.53';
/** Port of the egress relay on the guest's lo (what every job's proxy variables name). */
export const GUEST_EGRESS_PORT = 3128;
/** The guest's system trust bundle (replaced by one that adds the egress CA when TLS is terminated). */
export const GUEST_CA_BUNDLE = '/etc/ssl/certs/ca-certificates.crt';
/** The egress CA certificate alone (for NODE_EXTRA_CA_CERTS). */
export const GUEST_EGRESS_CA = '/etc/paddock/egress-ca.pem';
/** The JVM's trust store (Debian's cacerts, replaced by one that adds the egress CA when TLS is terminated). */
export const GUEST_JAVA_CACERTS = '/etc/ssl/certs/java/cacerts';
