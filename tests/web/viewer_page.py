"""tests/web/pages/viewer.html as the viewer tests see it: its CSS size, where its parts are, their colours."""

RED = (200, 40, 40)
GREEN = (30, 180, 60)
BLUE = (30, 60, 200)
YELLOW = (240, 200, 0)
PURPLE = (140, 40, 200)
GREY = (230, 230, 230)
WHITE = (255, 255, 255)
MAGENTA = (255, 0, 255)
CSS_W, CSS_H = 640, 400
BOX = (200, 100)  # CSS centre of #box
FIELD = (200, 270)  # CSS centre of #field
FLAG = (425, 300)  # CSS centre of #flag
BLANK = (20, 20)  # white background
