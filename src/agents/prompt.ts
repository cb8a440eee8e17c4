import type { AgentDefinition, RunTrigger } from './types.js';

/** What the instructions of one run are built from besides the agent. */
export interface PromptContext {
  trigger: RunTrigger;
  now: Date;
  /** Guest directory where skill directories are mounted read-only (`<root>/<skill>`), if they are. */
  skillsGuestRoot?: string | undefined;
}

const TRIGGERS: Record<RunTrigger, string> = {
  manual: 'a person, from the command line',
  api: 'a person, from the dock or the API',
  schedule: 'its schedule',
  'catch-up': 'its schedule (a catch-up run: the server was down at the scheduled time)',
};

/**
 * The system instructions of a run: who the agent is, its task (the AGENT.md body), the text of
 * each skill (with the files beside it), and how an unattended run works (budgets, where the
 * answer goes, that approvals are impossible).
 */
export function systemPrompt(agent: AgentDefinition, ctx: PromptContext): string {
  const parts: string[] = [
    `You are "${agent.name}", an agent run by Paddock. ${agent.description}`,
    `# Task\n\n${agent.instructions}`,
  ];
  for (const skill of agent.skills) {
    let section = `# Skill: ${skill.name}\n\n${skill.description}\n\n${skill.instructions}`;
    if (skill.files.length > 0) {
      const where = ctx.skillsGuestRoot
        ? ` They are readable inside the computer under ${ctx.skillsGuestRoot}/${skill.name}/.`
        : '';
      section += `\n\nFiles that come with this skill: ${skill.files.join(', ')}.${where}`;
    }
    parts.push(section);
  }
  const delivery =
    agent.notify.length > 0
      ? `It is delivered to the notification channel${agent.notify.length > 1 ? 's' : ''} ${agent.notify.join(', ')} and stored with the run.`
      : 'It is stored with the run.';
  parts.push(
    [
      '# How this run works',
      '',
      `- This run was started by ${TRIGGERS[ctx.trigger]} at ${ctx.now.toISOString()}. Nobody watches it: you cannot ask questions, and tools that need a person's approval are refused.`,
      '- Use only the tools you were given. A failed call comes back as JSON {"code", "message"}; the message says what to do next. Do not repeat a call that failed the same way twice.',
      `- Budget: at most ${agent.limits.maxTurns} model turns, ${agent.limits.maxTokens} tokens and ${Math.round(agent.limits.wallTimeMs / 1000)} seconds; plan so that you finish well inside it.`,
      `- When the task is done, reply with your final answer and no tool call. ${delivery} Write it for the person who reads it: the result first, no narration of your steps.`,
    ].join('\n'),
  );
  return parts.join('\n\n');
}

/** The first user message: the run's input, or a plain request to do the task. */
export function firstMessage(input: string | undefined): string {
  return input?.trim() ? input : 'Do the task described in your instructions now.';
}
