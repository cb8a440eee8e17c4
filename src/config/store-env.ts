/** The environment variable that holds the password of a database store (no zod: the stores import it). */
export const STORE_PASSWORD_ENV = 'PADDOCK_STORE_PASSWORD';
