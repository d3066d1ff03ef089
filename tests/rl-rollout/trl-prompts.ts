// The prompts of TRL's OpenEnv examples (examples/scripts/openenv/{echo,catch,wordle}.py, grpo-semantics.md
// §14), as the scripts write them: what the example classes in examples/ must render.

export const ECHO_PROMPTS = [
  "Try to echo 'Hello World!' in the environment.",
  "Make the environment echo 'Goodbye World!'",
  "Can you ask the environment to echo 'TRL is great!'?",
  "What happens if you ask the environment to echo 'I love RLHF!'?",
  "Try to make the environment echo 'OpenEnv is awesome!'",
];

export const CATCH_PROMPT = `You are an AI agent playing the game **Catch**.

### Game Description
- The game is played on a **10×5 grid**.
- There is one **falling ball** and one **paddle** that you control at the bottom.
- The objective is to **move the paddle left or right to catch the ball** as it falls.
- The episode ends when the ball reaches the bottom row:
  - You get **+1 reward** if you catch it.
  - You get **–1 reward** if you miss it.

### Observation Format
Each observation is a flattened 10x5 grid (list of 50 floats).
- 1.0 → occupied (ball or paddle)
- 0.0 → empty cell

You have the following tools available:
- \`move(direction)\`: Move the paddle left or right. Direction must be "left" or "right".
- \`stay\`: Do nothing and let the ball fall one step.

Observe the grid, determine where the ball is relative to the paddle, then move accordingly.
`;

export const WORDLE_PROMPT = `You are an expert Wordle solver with deep knowledge of English vocabulary, letter frequency patterns, and optimal guessing strategies.

Follow these rules to play Wordle:

1. The target is a 5-letter English word
2. You have 6 attempts to guess the correct word
3. After each guess, you receive color-coded feedback:
   - GREEN (G): Letter is correct and in the correct position
   - YELLOW (Y): Letter is in the word but in the wrong position
   - GRAY (X): Letter is not in the word at all
4. All guesses must be valid 5-letter English words
5. You cannot reuse a word you've already guessed
6. Use the tool \`guess\` to make a guess.
`;
